package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"text/template"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemkit/idem/idemtest"
)

// checkFlags are the flags of `idem check`.
type checkFlags struct {
	endpoint      string
	headers       []string
	secondHeaders []string
	slowHeaders   []string
	bodyTemplate  string
	contentType   string
	concurrency   int
	adminToken    string
	json          bool
	timeout       time.Duration
}

// newCheckCommand returns `idem check URL`: the protocol conformance
// checks run against any server.
func newCheckCommand() *cobra.Command {
	var f checkFlags
	cmd := &cobra.Command{
		Use:   "check URL",
		Short: "Check that a server honours the Idempotency-Key protocol",
		Long: `Check runs the server-side checks of the idempotency protocol against the
server at URL: replay with an identical body, key reuse with another body,
missing and malformed keys, quoted keys, concurrent duplicates, 409 with
Retry-After, scoping by principal, and RFC 9457 problem documents.

Each check cites its PROTOCOL.md row and the section of
draft-ietf-httpapi-idempotency-key-header-07. The checks create resources
on the server. The exit status is non-zero when any check fails.`,
		Example: `  idem check http://127.0.0.1:8080
  idem check https://api.example.com --endpoint /v1/orders \
    --header 'Authorization: Bearer sk_test_a' --second-header 'Authorization: Bearer sk_test_b' \
    --body-template order.json.tmpl --json`,
		Args:         cobra.ExactArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheck(cmd.Context(), cmd.OutOrStdout(), args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.endpoint, "endpoint", idemtest.DefaultConformanceEndpoint, "path of the guarded operation")
	fl.StringArrayVarP(&f.headers, "header", "H", nil,
		"header 'Name: value' sent on every request, e.g. the first principal's Authorization (repeatable)")
	fl.StringArrayVar(&f.secondHeaders, "second-header", nil,
		"authentication header 'Name: value' of a second principal, for the scoping check (repeatable)")
	fl.StringArrayVar(&f.slowHeaders, "slow-header", nil,
		"header 'Name: value' that makes the server hold a request, to observe 409 in-progress (repeatable)")
	fl.StringVar(&f.bodyTemplate, "body-template", "",
		"file with the request body as a Go template; {{.N}} is a number unique to each request")
	fl.StringVar(&f.contentType, "content-type", idemtest.DefaultConformanceContentType, "Content-Type of the request bodies")
	fl.IntVar(&f.concurrency, "concurrency", idemtest.DefaultConformanceConcurrency, "duplicates sent at once by the concurrency check")
	fl.StringVar(&f.adminToken, "admin-token", "",
		"admin token of a reference server (idem serve --admin-token): lets the check slow it to observe 409 in-progress")
	fl.BoolVar(&f.json, "json", false, "print the results as JSON")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Second, "deadline for the whole run")
	return cmd
}

// runCheck turns the flags into options, runs the checks and prints them.
func runCheck(ctx context.Context, out io.Writer, baseURL string, f checkFlags) error {
	if err := validateBaseURL(baseURL); err != nil {
		return err
	}
	opts, err := f.options()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if f.adminToken != "" {
		h, err := newAdminHold(ctx, baseURL, f.adminToken)
		if err != nil {
			return err
		}
		opts.Hold = h.hold
	}
	results, err := idemtest.RunConformance(ctx, baseURL, opts)
	if err != nil {
		return fmt.Errorf("check: %s", strings.TrimPrefix(err.Error(), "idemtest: "))
	}
	if f.json {
		err = writeCheckJSON(out, baseURL, results)
	} else {
		err = writeCheckTable(out, results)
	}
	if err != nil {
		return fmt.Errorf("check: writing the report: %w", err)
	}
	if n := countFailed(results); n > 0 {
		return fmt.Errorf("check: %d of %d checks failed", n, len(results))
	}
	return nil
}

// validateBaseURL rejects anything but an absolute http(s) URL.
func validateBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("check: URL %q must be an absolute http or https URL, such as http://127.0.0.1:8080", raw)
	}
	return nil
}

// options validates the flags and builds the conformance options.
func (f checkFlags) options() (idemtest.ConformanceOptions, error) {
	if f.timeout <= 0 {
		return idemtest.ConformanceOptions{}, fmt.Errorf("check: --timeout must be positive, got %s", f.timeout)
	}
	if f.concurrency < 1 {
		return idemtest.ConformanceOptions{}, fmt.Errorf("check: --concurrency must be at least 1, got %d", f.concurrency)
	}
	opts := idemtest.ConformanceOptions{
		Endpoint:    f.endpoint,
		ContentType: f.contentType,
		Concurrency: f.concurrency,
	}
	var err error
	if opts.Header, err = parseHeaders("--header", f.headers); err != nil {
		return opts, err
	}
	if opts.SecondPrincipal, err = parseHeaders("--second-header", f.secondHeaders); err != nil {
		return opts, err
	}
	if opts.SlowHeader, err = parseHeaders("--slow-header", f.slowHeaders); err != nil {
		return opts, err
	}
	if f.bodyTemplate != "" {
		if opts.Body, err = loadBodyTemplate(f.bodyTemplate); err != nil {
			return opts, err
		}
	}
	return opts, nil
}

// parseHeaders parses 'Name: value' flags; nil when there are none.
func parseHeaders(flag string, lines []string) (http.Header, error) {
	if len(lines) == 0 {
		return nil, nil
	}
	h := http.Header{}
	for _, line := range lines {
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || !validHeaderName(name) {
			return nil, fmt.Errorf("check: %s %q: want 'Name: value'", flag, line)
		}
		h.Add(name, strings.TrimSpace(value))
	}
	return h, nil
}

// validHeaderName reports whether name is a non-empty RFC 9110 token.
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range []byte(name) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// bodyData is what a body template sees.
type bodyData struct {
	// N is a number unique to each request of the run.
	N int
}

// loadBodyTemplate reads and parses a body template and proves, by
// rendering two bodies, that it executes and gives distinct bodies.
func loadBodyTemplate(path string) (func(int) []byte, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("check: --body-template: %w", err)
	}
	tmpl, err := template.New(path).Option("missingkey=error").Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("check: --body-template: %w", err)
	}
	render := func(n int) ([]byte, error) {
		var b bytes.Buffer
		err := tmpl.Execute(&b, bodyData{N: n})
		return b.Bytes(), err
	}
	first, err := render(0)
	if err != nil {
		return nil, fmt.Errorf("check: --body-template: %w", err)
	}
	second, err := render(1)
	if err != nil {
		return nil, fmt.Errorf("check: --body-template: %w", err)
	}
	if bytes.Equal(first, second) {
		return nil, errors.New("check: --body-template must use {{.N}} so that each request body differs")
	}
	return func(n int) []byte {
		// Proven to execute above; the data is the same shape every time.
		b, _ := render(n)
		return b
	}, nil
}

// resultWord is the RESULT column of a check.
func resultWord(r idemtest.CheckResult) string {
	switch {
	case r.Skipped:
		return "SKIP"
	case r.Passed:
		return "PASS"
	default:
		return "FAIL"
	}
}

func writeCheckTable(out io.Writer, results []idemtest.CheckResult) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tCHECK\tREF\tRESULT\tDETAIL")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Name, r.Ref, resultWord(r), oneLine(r.Detail))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	passed, failed, skipped := tally(results)
	_, err := fmt.Fprintf(out, "\n%d checks: %d passed, %d failed, %d skipped\n", len(results), passed, failed, skipped)
	return err
}

// checkReport is the --json output.
type checkReport struct {
	URL     string                 `json:"url"`
	Passed  int                    `json:"passed"`
	Failed  int                    `json:"failed"`
	Skipped int                    `json:"skipped"`
	Checks  []idemtest.CheckResult `json:"checks"`
}

func writeCheckJSON(out io.Writer, baseURL string, results []idemtest.CheckResult) error {
	passed, failed, skipped := tally(results)
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(checkReport{URL: baseURL, Passed: passed, Failed: failed, Skipped: skipped, Checks: results})
}

func tally(results []idemtest.CheckResult) (passed, failed, skipped int) {
	for _, r := range results {
		switch {
		case r.Skipped:
			skipped++
		case r.Passed:
			passed++
		default:
			failed++
		}
	}
	return passed, failed, skipped
}

func countFailed(results []idemtest.CheckResult) int {
	_, failed, _ := tally(results)
	return failed
}

// oneLine keeps a detail on its table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
