package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/internal/redact"
	"github.com/idemkit/idem/keystore"
)

// intentsEnv is what every intents subcommand shares: the keystore flags
// and the clock that ages intents.
type intentsEnv struct {
	ks     keystoreFlags
	getenv func(string) string
	now    func() time.Time
}

// newIntentsCommand returns `idem intents`: list, show, resume, settle,
// purge, adopt and repair the intents in a client keystore. getenv reads
// the environment (IDEM_KEYSTORE, IDEM_TOKEN).
func newIntentsCommand(getenv func(string) string) *cobra.Command {
	env := &intentsEnv{getenv: getenv, now: time.Now}
	cmd := &cobra.Command{
		Use:   "intents",
		Short: "List, show, resume, settle, purge, adopt and repair the intents in a client keystore",
		Long: `Intents works on the keystore of a program that uses the idem client: the
intents it began, their idempotency keys, states and stored answers.

The keystore is a bbolt file (default ./` + defaultKeystore + `, or $` + keystoreEnv + `) or a
postgres:// URL. A bbolt file must exist; it is never created here, nor is
a Postgres keystore's schema or table (--keystore-schema, --keystore-table).
A file that another process holds is reported after --lock-timeout.

Credentials are never stored in a keystore, so resume takes them again
with --token or --header.`,
		Example: `  idem intents list --state pending
  idem intents show batch-42/payment-3
  idem intents resume --token "$API_TOKEN"
  idem intents settle batch-42/payment-3 --succeeded --note "pay_123 in the provider dashboard"
  idem intents purge --older-than 24h --dry-run
  idem intents adopt 0b0f4a52-8d1e-4f8e-9a52-1c3a0e6f4b1d --token "$API_TOKEN"
  idem intents repair 0b0f4a52-8d1e-4f8e-9a52-1c3a0e6f4b1d --export damaged.json --yes`,
		Args: unknownSubcommand,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	env.ks.register(cmd.PersistentFlags(), getenv)
	cmd.AddCommand(
		newIntentsListCommand(env),
		newIntentsShowCommand(env),
		newIntentsResumeCommand(env),
		newIntentsSettleCommand(env),
		newIntentsPurgeCommand(env),
		newIntentsAdoptCommand(env),
		newIntentsRepairCommand(env),
	)
	return cmd
}

// intentSummary is one intent without its payloads: what list prints.
type intentSummary struct {
	Key  string `json:"key"`
	Name string `json:"name,omitempty"`
	// Principal is the fingerprint of who the intent acts for, "" for
	// none (anonymous, or stored by a build before names were scoped).
	Principal string         `json:"principal,omitempty"`
	State     keystore.State `json:"state"`
	Method    string         `json:"method"`
	URL       string         `json:"url"`
	Attempts  int            `json:"attempts"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
	// Status is the stored answer's status, 0 when there is none.
	Status    int    `json:"status,omitempty"`
	Operation string `json:"operation,omitempty"`
	LastError string `json:"last_error,omitempty"`
	// MayHaveExecuted: an attempt may have taken effect without the
	// client holding the final answer. Always present, for scripts.
	MayHaveExecuted bool `json:"may_have_executed"`
	// Reconciled is the outcome of the last reconciliation, "" if none.
	Reconciled string `json:"reconciled,omitempty"`
	// PurgedAt is when a purge reduced the intent to its tombstone.
	PurgedAt time.Time `json:"purged_at,omitzero"`
}

func summarize(r *keystore.Record) intentSummary {
	s := intentSummary{
		Key:       r.Key,
		Name:      keystore.BusinessName(r.Name, r.Principal),
		Principal: r.Principal,
		State:     r.State,
		Method:    r.Method,
		URL:       shownText(r.URL),
		Attempts:  r.Attempts,
		CreatedAt: r.CreatedAt,
		UpdatedAt: r.UpdatedAt,
		Operation: shownText(r.Operation),
		LastError: shownText(r.LastError),

		MayHaveExecuted: r.MayHaveExecuted,
		PurgedAt:        r.Purged,
	}
	if r.Response != nil {
		s.Status = r.Response.Status
	}
	if n := len(r.Reconciliations); n > 0 {
		s.Reconciled = r.Reconciliations[n-1].Outcome
	}
	return s
}

// shownText is s as the command prints it: the value of any secret query
// parameter (redact.DefaultParams) a URL in it shows is redacted. The
// client keeps them out of what it stores, but a keystore written by an
// earlier build may hold one in a LastError.
func shownText(s string) string {
	return redact.QueryText(s, redact.IsDefaultParam)
}

// settledBy returns the reconciliation that settled r, if one did: a
// settled record whose last verdict is its state got it from that verdict,
// not from the server's answer.
func settledBy(r *keystore.Record) (keystore.Reconciliation, bool) {
	if !r.State.Settled() {
		return keystore.Reconciliation{}, false
	}
	// The server's late answers, kept as evidence after a verdict, are
	// passed over: they never settle anything.
	for i := len(r.Reconciliations) - 1; i >= 0; i-- {
		v := r.Reconciliations[i]
		if v.Source == "server" || v.Outcome == keystore.ReconciledUnknown {
			continue
		}
		return v, v.Outcome == string(r.State)
	}
	return keystore.Reconciliation{}, false
}

// verdictText is a reconciliation on one line, the way settle prints it:
// "succeeded (manual, by alice: pay_123 in the dashboard)".
func verdictText(v keystore.Reconciliation) string {
	var b strings.Builder
	b.WriteString(v.Outcome + " (" + v.Source)
	if v.By != "" && v.By != v.Source {
		b.WriteString(", by " + v.By)
	}
	if v.Note != "" {
		b.WriteString(": " + oneLineOf(v.Note, 1<<10))
	}
	b.WriteString(")")
	return b.String()
}

// secretHeaders are shown as "[redacted]" even though a keystore written
// by the idem client never holds them: a keystore is not trusted to be
// the client's alone (nor written by this build: earlier ones stored a
// dialect's credential headers, such as Adyen's X-API-Key). They are the
// client's default secrets, Set-Cookie, and every shipped dialect's
// credential headers (dialect.Dialect.SecretHeaders).
var secretHeaders = func() []string {
	names := []string{"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie"}
	for _, n := range dialect.Names() {
		d, err := dialect.ByName(n)
		if err != nil {
			continue
		}
		for _, h := range d.SecretHeaders {
			if canon := http.CanonicalHeaderKey(h); !slices.Contains(names, canon) {
				names = append(names, canon)
			}
		}
	}
	return names
}()

// redacted returns a copy of h with the values of secret headers
// replaced: those of secretHeaders, and the names also gives (the secret
// headers a record says its intent was begun with).
func redacted(h http.Header, also ...string) http.Header {
	if len(h) == 0 {
		return nil
	}
	out := h.Clone()
	for name := range out {
		canon := http.CanonicalHeaderKey(name)
		if slices.Contains(secretHeaders, canon) || slices.Contains(also, canon) {
			out[name] = []string{"[redacted]"}
		}
	}
	return out
}

// statusText is "201 Created" for 201.
func statusText(code int) string {
	if text := http.StatusText(code); text != "" {
		return fmt.Sprintf("%d %s", code, text)
	}
	return fmt.Sprint(code)
}

// printable reports whether b reads as text: valid UTF-8 without control
// characters other than tab, newline and carriage return.
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
			return false
		}
	}
	return true
}

// humanAge is a short duration for a table column: 45s, 12m, 3h5m, 4d2h.
func humanAge(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	default:
		return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
	}
}

// shortDuration prints d without trailing zero units: 24h, not 24h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// oneLineOf collapses white space so a stored message fits one line, and
// cuts it to at most max runes.
func oneLineOf(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}
