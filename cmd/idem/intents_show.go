package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemkit/idem/keystore"
)

// showFlags are the flags of `idem intents show`.
type showFlags struct {
	json bool
}

func newIntentsShowCommand(env *intentsEnv) *cobra.Command {
	var f showFlags
	cmd := &cobra.Command{
		Use:   "show KEY|NAME",
		Short: "Show one intent in full: request, headers, body and stored answer",
		Long: `Show prints one intent, found by its idempotency key or its business name:
the request it sends (method, URL, stored headers, body), its fingerprint,
times, attempts and last error, and the answer stored for it.

A body is printed as text when it is printable and as base64 otherwise.
Credentials are never stored in a keystore; a secret header found anyway
is printed as [redacted].`,
		Example: `  idem intents show 0b0f4a52-8d1e-4f8e-9a52-1c3a0e6f4b1d
  idem intents show batch-42/payment-3 --json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runShow(cmd.Context(), cmd.OutOrStdout(), env, args[0], f)
		},
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print the intent as a JSON object")
	return cmd
}

// intentDetail is one intent in full: what show prints.
type intentDetail struct {
	intentSummary
	Fingerprint string        `json:"fingerprint"`
	Header      http.Header   `json:"header,omitempty"`
	Body        *bodyView     `json:"body,omitempty"`
	Response    *responseView `json:"response,omitempty"`
	// Reconciliations is the audit trail, oldest first.
	Reconciliations []keystore.Reconciliation `json:"reconciliations,omitempty"`
}

// responseView is the stored answer of an intent.
type responseView struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
	Body   *bodyView   `json:"body,omitempty"`
}

// bodyView is a body as text when printable, else as base64.
type bodyView struct {
	Size   int    `json:"size"`
	Text   string `json:"text,omitempty"`
	Base64 string `json:"base64,omitempty"`
}

func newBodyView(b []byte) *bodyView {
	if len(b) == 0 {
		return nil
	}
	if printable(b) {
		return &bodyView{Size: len(b), Text: string(b)}
	}
	return &bodyView{Size: len(b), Base64: base64.StdEncoding.EncodeToString(b)}
}

func detail(r *keystore.Record) intentDetail {
	d := intentDetail{
		intentSummary: summarize(r),
		Fingerprint:   r.Fingerprint,
		Header:        redacted(r.Header, r.SecretHeaders...),
		Body:          newBodyView(r.Body),

		Reconciliations: r.Reconciliations,
	}
	if r.Response != nil {
		d.Response = &responseView{
			Status: r.Response.Status,
			Header: redacted(r.Response.Header),
			Body:   newBodyView(r.Response.Body),
		}
	}
	return d
}

func runShow(ctx context.Context, out io.Writer, env *intentsEnv, keyOrName string, f showFlags) (err error) {
	if keyOrName == "" {
		return errors.New("show: empty key or name")
	}
	st, err := env.ks.openReadOnly(ctx)
	if err != nil {
		return err
	}
	defer env.ks.closeStore(st, &err)
	rec, err := findIntent(ctx, st, keyOrName)
	if err != nil {
		return env.lookupError(keyOrName, err)
	}
	d := detail(rec)
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	return writeDetail(out, d, env.now())
}

// findIntent looks keyOrName up as a key first, then as a business name.
// Names are scoped by principal, and a keystore of an earlier build holds
// them unscoped, so one name may belong to several intents: then it
// fails with an *ambiguousNameError listing them, and never picks one.
func findIntent(ctx context.Context, st keystore.Store, keyOrName string) (*keystore.Record, error) {
	rec, err := st.Get(ctx, keyOrName)
	if !errors.Is(err, keystore.ErrNotFound) {
		return rec, err
	}
	found, err := namesakes(ctx, st, keyOrName)
	switch {
	case len(found) == 0 && err != nil:
		// Damaged records were left out: one of them may be it.
		return nil, fmt.Errorf("no readable intent with key or name %q: %w", keyOrName, err)
	case len(found) == 0:
		return nil, fmt.Errorf("%w: no intent with key or name %q", keystore.ErrNotFound, keyOrName)
	case len(found) == 1 && err == nil:
		return found[0], nil
	}
	return nil, &ambiguousNameError{name: keyOrName, found: found, damaged: err}
}

// maxNamesakes bounds the intents of one name a command lists.
const maxNamesakes = 64

// namesakes are the intents whose business name is name, under any
// principal or none: one indexed read where the keystore offers it
// (keystore.NameScanner), a scan of the list otherwise. With a partial
// list, the error says damaged records were left out.
func namesakes(ctx context.Context, st keystore.Store, name string) ([]*keystore.Record, error) {
	if ns, ok := st.(keystore.NameScanner); ok {
		return ns.Namesakes(ctx, name, maxNamesakes)
	}
	all, err := st.List(ctx, keystore.Filter{})
	if err != nil && len(all) == 0 {
		return nil, err
	}
	var found []*keystore.Record
	for _, r := range all {
		if keystore.IsNamesake(r, name) {
			found = append(found, r)
		}
	}
	return found, err
}

// ambiguousNameError is findIntent's error when several intents bear
// one name: it lists their keys, so the user picks one by key.
type ambiguousNameError struct {
	name    string
	found   []*keystore.Record
	damaged error // damaged records left out of the search, nil if none
}

func (e *ambiguousNameError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d intents are named %q; give the key of the one you mean:", len(e.found), e.name)
	for _, r := range e.found {
		fmt.Fprintf(&b, "\n  %s  %s  %s", r.Key, principalText(r), r.State)
	}
	if e.damaged != nil {
		fmt.Fprintf(&b, "\n  (and damaged records that could not be read: %v)", e.damaged)
	}
	return b.String()
}

// principalText names a record's principal in a listing: the first 8
// digits of its fingerprint, or what an intent without one is.
func principalText(r *keystore.Record) string {
	switch {
	case r.Principal != "":
		return "principal " + r.Principal[:min(8, len(r.Principal))]
	case r.Name != "":
		return "no principal (an earlier build's, or anonymous)"
	}
	return "no principal"
}

func writeDetail(out io.Writer, d intentDetail, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	field := func(label, value string) {
		if value != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", label, value)
		}
	}
	field("Key", d.Key)
	field("Name", d.Name)
	field("State", string(d.State))
	field("Request", d.Method+" "+d.URL)
	field("Fingerprint", d.Fingerprint)
	field("Created", fmt.Sprintf("%s (%s ago)", d.CreatedAt.Format(time.RFC3339), humanAge(now.Sub(d.CreatedAt))))
	field("Updated", d.UpdatedAt.Format(time.RFC3339))
	field("Attempts", fmt.Sprint(d.Attempts))
	field("Operation", d.Operation)
	field("Last error", oneLineOf(d.LastError, 1<<10))
	if d.MayHaveExecuted {
		field("May have executed", "yes")
	}
	if !d.PurgedAt.IsZero() {
		field("Purged", d.PurgedAt.UTC().Format(time.RFC3339)+" (a tombstone: bodies and request headers dropped; the name stays bound to its key)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	if len(d.Reconciliations) > 0 {
		b.WriteString("\nReconciliations\n")
		for _, v := range d.Reconciliations {
			fmt.Fprintf(&b, "  %s  %s\n", v.At.UTC().Format(time.RFC3339), verdictText(v))
		}
	}
	purged := !d.PurgedAt.IsZero()
	writeMessage(&b, "Request", d.Header, d.Body, purged)
	if d.Response != nil {
		writeMessage(&b, "Response "+statusText(d.Response.Status), d.Response.Header, d.Response.Body, purged)
	} else if len(d.Reconciliations) > 0 && d.State.Settled() {
		// A verdict without the provider's document settled it.
		b.WriteString("\nResponse\n  none stored: settled by the reconciliation above\n")
	} else {
		b.WriteString("\nResponse\n  none stored yet\n")
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// writeMessage prints headers (sorted) and a body under a title; a
// purged intent's body is gone, not empty.
func writeMessage(b *strings.Builder, title string, h http.Header, body *bodyView, purged bool) {
	fmt.Fprintf(b, "\n%s\n", title)
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, v := range h[name] {
			fmt.Fprintf(b, "  %s: %s\n", name, v)
		}
	}
	switch {
	case body == nil && purged:
		b.WriteString("  (body purged)\n")
	case body == nil:
		b.WriteString("  (no body)\n")
	case body.Base64 != "":
		fmt.Fprintf(b, "  body: %d bytes, not text; base64:\n  %s\n", body.Size, body.Base64)
	default:
		fmt.Fprintf(b, "  body: %d bytes\n", body.Size)
		for line := range strings.Lines(body.Text) {
			fmt.Fprintf(b, "    %s\n", strings.TrimRight(line, "\r\n"))
		}
	}
}
