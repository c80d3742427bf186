package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"text/template"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/redact"
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
	bursts        int
	keyFormat     string
	keyForm       string
	profile       string
	dialect       string
	listEndpoint  string
	otherEndpoint string
	invalidBody   string
	strict        bool
	adminToken    string
	json          bool
	list          bool
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
server at URL: valid and malformed keys, replay with an identical body,
key reuse with another body, missing and quoted keys, bursts of concurrent
duplicates, duplicates while the original runs, scoping by principal, a
validation error that must not burn the key, and RFC 9457 problems.

Verdicts judge behaviour, not names: a replay is the same status and body
with no new resource (counted through --list-endpoint), scope is two
principals getting two resources. Every check quotes the sentence it grades
(draft-ietf-httpapi-idempotency-key-header-07, PROTOCOL.md, or the
provider's page; "quote" in --json; --list prints them all), and its level
says how strongly that sentence asks: MUST or SHOULD only where the
sentence uses the word; advice where the source recommends without either
word (reported as WARN, the exit status unchanged); idem, this project's
own rules, graded with --profile idem only: its names (problem-type
suffixes, Idempotent-Replayed, Retry-After), its fingerprint (a used key
sent to another query, or to --other-endpoint, is key reuse), its key rules
(valid-keys, invalid-key, missing-key: the draft leaves the key's format to
the server and asks for 400 only where a key is documented as required), a
validation error that leaves the key free (error-not-stored: draft-07 §2.6
lets the server answer "with the result of the previously completed
operation, success or an error"), and the draft's advice made rules.
--dialect (` + strings.Join(dialect.Names(), ", ") + `) grades a provider's
semantics instead: a check quoting the provider's page is at level
documented, one whose sentence could not be confirmed there is advice;
the idem profile with a provider dialect is refused. --dialect shopify is
refused too (exit 2): its key travels in a GraphQL directive and its
answers are GraphQL documents, which these checks do not grade.

` + checkListHelp() + `
The checks create resources on the server. Exit status: 0 every check
passed, 1 a check failed (or, with --strict, was skipped), 2 the check could
not run (bad flags, server unreachable). --json always prints one JSON
document on stdout, errors included.`,
		Example: `  idem check http://127.0.0.1:8080
  idem check http://127.0.0.1:8080 --profile idem --admin-token "$ADMIN"
  idem check --list --dialect stripe
  idem check https://api.example.com --endpoint /v1/orders --list-endpoint /v1/orders \
    --header 'Authorization: Bearer sk_test_a' --second-header 'Authorization: Bearer sk_test_b' \
    --body-template order.json.tmpl --key-format ulid --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			want := cobra.ExactArgs(1)
			if f.list {
				want = cobra.NoArgs
			}
			if err := want(cmd, args); err != nil {
				if f.list {
					err = fmt.Errorf("check: --list takes no URL: %w", err)
				}
				return f.cannotRun(cmd.OutOrStdout(), "", err)
			}
			return nil
		},
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.list {
				return runCheckList(cmd.OutOrStdout(), f)
			}
			return runCheck(cmd.Context(), cmd.OutOrStdout(), args[0], f)
		},
	}
	cmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return f.cannotRun(cmd.OutOrStdout(), "", err)
	})
	fl := cmd.Flags()
	fl.StringVar(&f.endpoint, "endpoint", idemtest.DefaultConformanceEndpoint, "path of the guarded operation")
	fl.StringVar(&f.otherEndpoint, "other-endpoint", "",
		"path of the same operation with another path value (e.g. /v1/accounts/b/refunds), for the request-target check")
	fl.StringVar(&f.listEndpoint, "list-endpoint", idemtest.DefaultConformanceListEndpoint,
		`path of a GET listing the principal's resources, to count effects ("" for none)`)
	fl.StringArrayVarP(&f.headers, "header", "H", nil,
		"header 'Name: value' sent on every request, e.g. the first principal's Authorization (repeatable)")
	fl.StringArrayVar(&f.secondHeaders, "second-header", nil,
		"authentication header 'Name: value' of a second principal, for the scoping check (repeatable)")
	fl.StringArrayVar(&f.slowHeaders, "slow-header", nil,
		"header 'Name: value' that makes the server hold a request, to observe 409 in-progress (repeatable)")
	fl.StringVar(&f.bodyTemplate, "body-template", "",
		"file with the request body as a Go template; {{.N}} is a number unique to each request")
	fl.StringVar(&f.invalidBody, "invalid-body-template", "",
		"file with a body the endpoint refuses (a validation error), as a Go template with {{.N}}")
	fl.StringVar(&f.contentType, "content-type", idemtest.DefaultConformanceContentType, "Content-Type of the request bodies")
	fl.StringVar(&f.keyFormat, "key-format", idemtest.KeyFormatUUID,
		"shape of the keys sent: "+strings.Join(idemtest.KeyFormats(), ", "))
	fl.StringVar(&f.keyForm, "key-form", idemtest.KeyFormBare,
		`how keys are written in the key header: bare, or quoted (the Structured Field String of draft-07 §2.1, "8e03978e-…")`)
	fl.StringVar(&f.profile, "profile", idemtest.ProfileDraft,
		"levels graded: draft (MUST, SHOULD, advice) or idem (also this project's rules)")
	fl.StringVar(&f.dialect, "dialect", "draft", "provider semantics to grade against: "+strings.Join(dialect.Names(), ", "))
	fl.IntVar(&f.bursts, "bursts", idemtest.DefaultConformanceBursts, "bursts of concurrent duplicates, each over a fresh key")
	fl.IntVar(&f.concurrency, "burst-width", idemtest.DefaultConformanceConcurrency, "duplicates sent at once in each burst")
	// --concurrency is the old name of --burst-width, kept for scripts;
	// hidden rather than deprecated, whose notice would break --json.
	fl.IntVar(&f.concurrency, "concurrency", idemtest.DefaultConformanceConcurrency, "the same as --burst-width")
	_ = fl.MarkHidden("concurrency")
	fl.BoolVar(&f.strict, "strict", false, "a skipped check fails the run")
	fl.StringVar(&f.adminToken, "admin-token", "",
		"admin token of a reference server (idem serve --admin-addr public --admin-token T): lets the check slow it to observe 409 in-progress")
	fl.BoolVar(&f.json, "json", false, "print the results as one JSON document")
	fl.BoolVar(&f.list, "list", false,
		"print the checks --profile and --dialect grade, each with its level, source and quoted sentence, and exit")
	fl.DurationVar(&f.timeout, "timeout", 60*time.Second, "deadline for the whole run")
	return cmd
}

// runCheck turns the flags into options, runs the checks and prints them.
func runCheck(ctx context.Context, out io.Writer, baseURL string, f checkFlags) error {
	if err := validateBaseURL(baseURL); err != nil {
		return f.cannotRun(out, baseURL, err)
	}
	opts, err := f.options()
	if err != nil {
		return f.cannotRun(out, baseURL, err)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if f.adminToken != "" {
		h, err := newAdminHold(ctx, baseURL, f.adminToken)
		if err != nil {
			return f.cannotRun(out, baseURL, err)
		}
		opts.Hold = h.hold
	}
	results, err := idemtest.RunConformance(ctx, baseURL, opts)
	if err != nil {
		return f.cannotRun(out, baseURL, fmt.Errorf("check: %s", redact.Text(strings.TrimPrefix(err.Error(), "idemtest: "))))
	}
	if f.json {
		err = writeCheckJSON(out, f.report(baseURL, results, ""))
	} else {
		err = writeCheckTable(out, results)
	}
	if err != nil {
		return &exitError{code: exitCannotRun, err: fmt.Errorf("check: writing the report: %w", err)}
	}
	passed, failed, skipped, _ := tally(results)
	switch {
	case failed > 0:
		return &exitError{code: exitFailed, err: fmt.Errorf("check: %d of %d checks failed", failed, len(results))}
	case f.strict && skipped > 0:
		return &exitError{code: exitFailed, err: fmt.Errorf("check: %d of %d checks skipped (--strict)", skipped, passed+skipped)}
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
		return idemtest.ConformanceOptions{}, fmt.Errorf("check: --burst-width must be at least 1, got %d", f.concurrency)
	}
	if f.bursts < 1 {
		return idemtest.ConformanceOptions{}, fmt.Errorf("check: --bursts must be at least 1, got %d", f.bursts)
	}
	if !slices.Contains(idemtest.KeyFormats(), f.keyFormat) {
		return idemtest.ConformanceOptions{}, fmt.Errorf("check: --key-format %q: want one of %s", f.keyFormat, strings.Join(idemtest.KeyFormats(), ", "))
	}
	if !slices.Contains(idemtest.KeyForms(), f.keyForm) {
		return idemtest.ConformanceOptions{}, fmt.Errorf("check: --key-form %q: want one of %s", f.keyForm, strings.Join(idemtest.KeyForms(), ", "))
	}
	if f.profile != idemtest.ProfileDraft && f.profile != idemtest.ProfileIdem {
		return idemtest.ConformanceOptions{}, fmt.Errorf("check: --profile %q: want draft or idem", f.profile)
	}
	d, err := dialect.ByName(f.dialect)
	if err != nil && !strings.EqualFold(f.dialect, "idem") {
		return idemtest.ConformanceOptions{}, fmt.Errorf("check: --dialect: %w", err)
	}
	if err == nil && d.Name != "draft" && f.profile == idemtest.ProfileIdem {
		// The idem profile grades this project's vocabulary, which a
		// provider does not speak: grading it would fail the provider,
		// and dropping it silently would pass what was never graded.
		return idemtest.ConformanceOptions{}, fmt.Errorf("check: --profile idem with --dialect %s: %w; drop --profile idem "+
			"(the draft profile grades %s's documented semantics)", d.Name, idemtest.ErrProfileNotForDialect, d.Name)
	}
	if err == nil && d.PlaceKey != nil {
		// The checks place keys in headers or JSON members and grade
		// statuses; a GraphQL directive key and 200-with-errors answers
		// would be graded wrong.
		return idemtest.ConformanceOptions{}, fmt.Errorf("check: --dialect %s: %w: its key travels in a GraphQL @idempotent directive "+
			"and its answers are GraphQL documents; test a client against `idem serve --dialect %s` instead", d.Name, idemtest.ErrDialectNotGradable, d.Name)
	}
	list := f.listEndpoint
	if list == "" {
		list = idemtest.NoListEndpoint
	}
	opts := idemtest.ConformanceOptions{
		Endpoint:      f.endpoint,
		OtherEndpoint: f.otherEndpoint,
		ListEndpoint:  list,
		ContentType:   f.contentType,
		Concurrency:   f.concurrency,
		Bursts:        f.bursts,
		KeyFormat:     f.keyFormat,
		KeyForm:       f.keyForm,
		Profile:       f.profile,
		Dialect:       f.dialect,
	}
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
		if opts.Body, err = loadBodyTemplate("--body-template", f.bodyTemplate); err != nil {
			return opts, err
		}
	}
	if f.invalidBody != "" {
		if opts.InvalidBody, err = loadBodyTemplate("--invalid-body-template", f.invalidBody); err != nil {
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
func loadBodyTemplate(flag, path string) (func(int) []byte, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("check: %s: %w", flag, err)
	}
	tmpl, err := template.New(path).Option("missingkey=error").Parse(string(text))
	if err != nil {
		return nil, fmt.Errorf("check: %s: %w", flag, err)
	}
	render := func(n int) ([]byte, error) {
		var b bytes.Buffer
		err := tmpl.Execute(&b, bodyData{N: n})
		return b.Bytes(), err
	}
	first, err := render(0)
	if err != nil {
		return nil, fmt.Errorf("check: %s: %w", flag, err)
	}
	second, err := render(1)
	if err != nil {
		return nil, fmt.Errorf("check: %s: %w", flag, err)
	}
	if bytes.Equal(first, second) {
		return nil, fmt.Errorf("check: %s must use {{.N}} so that each request body differs", flag)
	}
	return func(n int) []byte {
		// Proven to execute above; the data is the same shape every time.
		b, _ := render(n)
		return b
	}, nil
}

// resultWord is the RESULT column of a check: WARN is advice not
// followed, which fails nothing.
func resultWord(r idemtest.CheckResult) string {
	switch {
	case r.Skipped:
		return "SKIP"
	case r.Passed:
		return "PASS"
	case r.Advised():
		return "WARN"
	default:
		return "FAIL"
	}
}

func writeCheckTable(out io.Writer, results []idemtest.CheckResult) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLEVEL\tCHECK\tREF\tRESULT\tDETAIL")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Level, r.Name, r.Ref, resultWord(r), oneLine(r.Detail))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	passed, failed, skipped, advised := tally(results)
	_, err := fmt.Fprintf(out, "\n%d checks: %d passed, %d failed, %d skipped, %d advice not followed\n",
		len(results), passed, failed, skipped, advised)
	return err
}

// checkReport is the --json output: always one document, the error of a
// run that could not happen included.
type checkReport struct {
	URL     string `json:"url"`
	Profile string `json:"profile"`
	Dialect string `json:"dialect"`
	Passed  int    `json:"passed"`
	Failed  int    `json:"failed"`
	Skipped int    `json:"skipped"`
	// Advised counts the advice checks not followed, which fail nothing.
	Advised int                    `json:"advised"`
	Error   string                 `json:"error,omitempty"`
	Checks  []idemtest.CheckResult `json:"checks"`
}

func (f checkFlags) report(baseURL string, results []idemtest.CheckResult, errText string) checkReport {
	passed, failed, skipped, advised := tally(results)
	if results == nil {
		results = []idemtest.CheckResult{}
	}
	return checkReport{URL: redact.Location(baseURL), Profile: f.profile, Dialect: f.dialect,
		Passed: passed, Failed: failed, Skipped: skipped, Advised: advised, Error: errText, Checks: results}
}

func writeCheckJSON(out io.Writer, report checkReport) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(report)
}

// tally counts the verdicts; advised counts advice not followed, which is
// neither passed nor failed.
func tally(results []idemtest.CheckResult) (passed, failed, skipped, advised int) {
	for _, r := range results {
		switch {
		case r.Skipped:
			skipped++
		case r.Passed:
			passed++
		case r.Advised():
			advised++
		default:
			failed++
		}
	}
	return passed, failed, skipped, advised
}

// oneLine keeps a detail on its table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
