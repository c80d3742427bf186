package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

// tokenEnv names the environment variable that carries the bearer token
// for resume, so it need not appear in the process list.
const tokenEnv = "IDEM_TOKEN"

// maxResumeConcurrency bounds --concurrency.
const maxResumeConcurrency = 64

// resumeFlags are the flags of `idem intents resume`.
type resumeFlags struct {
	keys        []string
	olderThan   time.Duration
	token       string
	headers     []string
	origins     []string
	maxAttempts int
	timeout     time.Duration
	retention   time.Duration
	concurrency int
	noProgress  bool
	json        bool
}

func newIntentsResumeCommand(env *intentsEnv) *cobra.Command {
	var f resumeFlags
	cmd := &cobra.Command{
		Use:   "resume",
		Short: "Send the pending intents again, each with its own idempotency key",
		Long: `Resume settles what a crashed or interrupted program left pending: every
pending intent is sent again with the idempotency key it was born with, so a
server that honours Idempotency-Key replays what already happened instead of
doing it twice. Accepted intents (202) are polled, never resent. An intent
older than --retention is not resent but marked expired, for reconciliation
by hand.

The keystore never holds credentials: give them with --token (or $` + tokenEnv + `)
or --header. They are added only to requests whose origin (scheme, host,
port) is that of an intent being resumed, or, with --origin (repeatable),
only to the origins given; a redirect or an operation's poll to another
origin never gets them. An intent the client refuses to send because its
credentials are missing or name another principal than it was begun with
is reported as refused.

A progress bar is drawn on stderr when it is a terminal; otherwise (or
with --no-progress) one line per intent is printed. The exit status is
1 when any intent is left pending, failed, expired or refused, or a
damaged record could not be read; 2 when nothing could be resumed (bad
flags, a keystore that cannot be opened, or no intent's server could be
reached: every attempt failed before sending a byte). --json prints one object with
every intent's outcome and the tally instead of the lines.`,
		Example: `  idem intents resume --token "$API_TOKEN"
  idem intents resume --key 0b0f4a52-8d1e-4f8e-9a52-1c3a0e6f4b1d --header 'Authorization: Bearer sk_live_…'
  idem intents resume --older-than 10m --max-attempts 3 --no-progress
  idem intents resume --token "$ACME_TOKEN" --origin https://api.acme.example`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.token == "" {
				f.token = env.getenv(tokenEnv)
			}
			return runResume(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), env, f)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&f.keys, "key", nil, "resume only this intent, by key or name (repeatable); any state")
	fl.DurationVar(&f.olderThan, "older-than", 0, "only pending intents created longer ago than this, e.g. 10m")
	fl.StringVar(&f.token, "token", "", "bearer token sent as 'Authorization: Bearer TOKEN' (default $"+tokenEnv+")")
	fl.StringArrayVarP(&f.headers, "header", "H", nil, "header 'Name: value' added to every attempt, like --token (repeatable)")
	fl.StringArrayVar(&f.origins, "origin", nil, "send --token and --header only to this origin, e.g. https://api.example.com (repeatable; default: the intents' origins)")
	fl.IntVar(&f.maxAttempts, "max-attempts", idem.DefaultMaxAttempts, "attempts per intent, counting the first")
	fl.DurationVar(&f.timeout, "timeout", time.Minute, "deadline for settling one intent, all its attempts included")
	fl.DurationVar(&f.retention, "retention", idem.DefaultRetention, "the server's key retention: older intents are not resent")
	fl.IntVar(&f.concurrency, "concurrency", 4, "intents settled at the same time")
	fl.BoolVar(&f.noProgress, "no-progress", false, "print one line per intent instead of a progress bar")
	fl.BoolVar(&f.json, "json", false, "print the outcome of every intent and the tally as one JSON object")
	return cmd
}

// validate rejects bad flags before the keystore is opened.
func (f resumeFlags) validate() error {
	switch {
	case f.maxAttempts < 1:
		return fmt.Errorf("--max-attempts %d: need at least 1", f.maxAttempts)
	case f.timeout <= 0:
		return fmt.Errorf("--timeout %s: need a positive duration", f.timeout)
	case f.retention <= 0:
		return fmt.Errorf("--retention %s: need a positive duration", f.retention)
	case f.olderThan < 0:
		return fmt.Errorf("--older-than %s: need a positive duration", f.olderThan)
	case f.concurrency < 1 || f.concurrency > maxResumeConcurrency:
		return fmt.Errorf("--concurrency %d: need 1 to %d", f.concurrency, maxResumeConcurrency)
	case f.olderThan > 0 && len(f.keys) > 0:
		return errors.New("--older-than and --key select intents in two ways; give one")
	}
	for _, k := range f.keys {
		if strings.TrimSpace(k) == "" {
			return errors.New("--key: empty key")
		}
	}
	for _, o := range f.origins {
		if _, err := parseOrigin(o); err != nil {
			return err
		}
	}
	_, err := f.credentials()
	return err
}

// credentials are the headers every attempt gets: --token and --header.
func (f resumeFlags) credentials() (http.Header, error) {
	h := http.Header{}
	for _, line := range f.headers {
		name, value, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || !validHeaderName(name) {
			return nil, fmt.Errorf("--header %q: want 'Name: value'", line)
		}
		if strings.EqualFold(name, "Idempotency-Key") {
			return nil, errors.New("--header: Idempotency-Key comes from each intent and cannot be set")
		}
		h.Add(name, strings.TrimSpace(value))
	}
	if f.token != "" {
		if h.Get("Authorization") != "" {
			return nil, errors.New("--token and an Authorization --header both set the credentials; give one")
		}
		h.Set("Authorization", "Bearer "+f.token)
	}
	return h, nil
}

// outcome is what came of resuming one intent.
type outcome struct {
	key, name string
	state     keystore.State
	status    int   // status of the answer, 0 if none
	err       error // the call's error, nil on success
}

func runResume(ctx context.Context, stdout, stderr io.Writer, env *intentsEnv, f resumeFlags) error {
	if err := f.validate(); err != nil {
		return err
	}
	creds, err := f.credentials()
	if err != nil {
		return err
	}
	st, err := env.ks.open(ctx)
	if err != nil {
		return err
	}
	var scope originSet // set once the intents are selected
	client, hc, err := newResumeClient(st, f, creds, &scope)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections() // the client leaves that to its owner
	defer client.Close()

	intents, bad, err := selectIntents(ctx, client, st, env, f)
	if err != nil {
		return err
	}
	scope = credentialScope(f, intents)
	lines := stdout // the lines of the text report; --json prints one document instead
	if f.json {
		lines = io.Discard
	}
	printDamaged(lines, bad)
	if len(intents) == 0 {
		if f.json {
			return writeResumeJSON(stdout, env.ks.display(), nil, bad)
		}
		if _, err := fmt.Fprintf(stdout, "nothing to resume: no pending intents in %s match\n", env.ks.display()); err != nil {
			return err
		}
		return damagedError(len(bad), env.ks.display())
	}
	// A refusal says so when --origin kept the credentials given from
	// the intent's origin.
	withheld := func(in *idem.Intent) string {
		if len(creds) == 0 {
			return ""
		}
		return scope.leavesOut(in.URL)
	}
	rep := newReporter(lines, stderr, len(intents), !f.noProgress && isTerminal(stderr))
	results := settleAll(ctx, client, intents, f, rep, withheld)
	rep.finish()
	if f.json {
		return writeResumeJSON(stdout, env.ks.display(), results, bad)
	}
	return summarizeResume(stdout, results, len(bad), env.ks.display())
}

// newResumeClient is the client a resume sends with, on st (which it
// closes): the flags' attempts and retention, and the credentials added
// only to the origins in scope, read once the intents are selected. The
// HTTP client is returned so its owner closes its idle connections.
func newResumeClient(st keystore.Store, f resumeFlags, creds http.Header, scope *originSet) (*idem.Client, *http.Client, error) {
	hc := resumeHTTPClient(creds)
	client, err := idem.New(
		idem.WithStore(st),
		idem.WithHTTPClient(hc),
		idem.WithMaxAttempts(f.maxAttempts),
		idem.WithRetention(f.retention),
		idem.WithRequestEditor(scopedCredentials(creds, scope)),
	)
	if err != nil {
		hc.CloseIdleConnections()
		return nil, nil, err
	}
	return client, hc, nil
}

// selectIntents finds the intents to resume: those --key names (in any
// state), or every pending and accepted one, optionally only the old ones.
// It returns too the damaged records the keystore left out of its list.
func selectIntents(ctx context.Context, client *idem.Client, st keystore.Store, env *intentsEnv, f resumeFlags) ([]*idem.Intent, []damaged, error) {
	if len(f.keys) > 0 {
		var out []*idem.Intent
		for _, k := range f.keys {
			rec, err := findIntent(ctx, st, k)
			if errors.Is(err, keystore.ErrNotFound) {
				return nil, nil, failedf("--key %q: no intent with this key or name in %s", k, env.ks.display())
			}
			if err != nil {
				return nil, nil, env.lookupError(k, err)
			}
			in, err := client.Resume(ctx, rec.Key)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, in)
		}
		return out, nil, nil
	}
	// Pending returns the intents it could read together with a
	// *keystore.CorruptRecordsError naming the damaged records.
	pending, err := client.Pending(ctx)
	bad := damagedRecords(err)
	if err != nil && bad == nil {
		return nil, nil, fmt.Errorf("reading %s: %w", env.ks.display(), err)
	}
	if f.olderThan == 0 {
		return pending, bad, nil
	}
	cutoff := env.now().Add(-f.olderThan)
	var out []*idem.Intent
	for _, in := range pending {
		if in.CreatedAt.Before(cutoff) {
			out = append(out, in)
		}
	}
	return out, bad, nil
}

// settleAll runs Do on every intent, f.concurrency at a time, and returns
// the outcomes in the intents' order. When ctx ends, the intents not
// started yet are reported as still pending.
func settleAll(ctx context.Context, client *idem.Client, intents []*idem.Intent, f resumeFlags, rep reporter, withheld func(*idem.Intent) string) []outcome {
	results := make([]outcome, len(intents))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(f.concurrency, len(intents)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				results[i] = markRefused(settleOne(ctx, client, intents[i], f.timeout), withheld(intents[i]))
				rep.done(results[i])
			}
		}()
	}
	for i := range intents {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

func settleOne(ctx context.Context, client *idem.Client, in *idem.Intent, timeout time.Duration) outcome {
	o := outcome{key: in.Key, name: in.Name}
	if err := ctx.Err(); err != nil {
		o.state, o.err = in.State, err
		return o
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := client.Do(ctx, in)
	if resp != nil {
		o.status = resp.StatusCode
		resp.Body.Close() // Do buffered it; this only tidies up
	}
	o.state, o.err = in.State, err
	return o
}

// summarizeResume prints the tally and returns an error when any intent
// is left unsettled or any damaged record was left out, quoting the last
// error seen so one line says why.
func summarizeResume(out io.Writer, results []outcome, damagedCount int, where string) error {
	var succeeded, failed, pending, expired, refused int
	var lastErr error
	for _, r := range results {
		switch r.state {
		case keystore.Succeeded:
			succeeded++
		case keystore.Failed:
			failed++
		case keystore.Expired:
			expired++
		case stateRefused:
			refused++
		default:
			pending++
		}
		if r.err != nil {
			lastErr = r.err
		}
	}
	line := fmt.Sprintf("resumed %d %s: %d succeeded, %d failed, %d still pending, %d expired",
		len(results), plural(len(results), "intent", "intents"), succeeded, failed, pending, expired)
	tally := fmt.Sprintf("%d failed, %d still pending, %d expired", failed, pending, expired)
	if refused > 0 {
		line += fmt.Sprintf(", %d refused for credentials", refused)
		tally += fmt.Sprintf(", %d refused for credentials", refused)
	}
	if damagedCount > 0 {
		line += fmt.Sprintf("; %d damaged %s not read", damagedCount, plural(damagedCount, "record", "records"))
	}
	fmt.Fprintln(out, line)
	unsettled := failed + pending + expired + refused
	if unsettled == 0 {
		return damagedError(damagedCount, where)
	}
	msg := fmt.Sprintf("%d of %d intents not settled (%s)", unsettled, len(results), tally)
	if damagedCount > 0 {
		msg += fmt.Sprintf(", and %d damaged %s in %s not read", damagedCount, plural(damagedCount, "record", "records"), where)
	}
	if lastErr != nil {
		msg += "; last error: " + oneLineOf(lastErr.Error(), 300)
	}
	if damagedCount == 0 && noneReached(results) {
		// The exit table's "a server that cannot be reached; nothing was
		// done": no request of any intent left the machine.
		return &exitError{code: exitCannotRun, err: errors.New("could not reach the server of any intent: nothing was sent, and " + msg)}
	}
	return &exitError{code: exitFailed, err: errors.New(msg)}
}

// noneReached reports whether no intent of results reached its server:
// each one is left unsettled (pending or accepted) by an error that
// proves no request was sent (serverUnreached).
func noneReached(results []outcome) bool {
	for _, r := range results {
		if r.state != keystore.Pending && r.state != keystore.Accepted {
			return false
		}
		if !serverUnreached(r.err) {
			return false
		}
	}
	return len(results) > 0
}

// serverUnreached reports whether err is a give-up whose attempts never
// got an answer and whose last one failed before a byte of the request
// was sent: the name did not resolve, or the connection (or a proxy's)
// could not be opened. Anything else may have reached the server.
func serverUnreached(err error) bool {
	var ge *idem.GiveUpError
	if !errors.As(err, &ge) || ge.LastStatus != 0 || ge.OutcomeUnknown || ge.LastErr == nil {
		return false
	}
	var dnsErr *net.DNSError
	if errors.As(ge.LastErr, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	return errors.As(ge.LastErr, &opErr) && (opErr.Op == "dial" || opErr.Op == "proxyconnect")
}

// damagedError is the error of a resume that left n damaged records out,
// nil when n is 0.
func damagedError(n int, where string) error {
	if n == 0 {
		return nil
	}
	return failedf("%d damaged %s in %s could not be read and %s not resumed (see the damaged lines above); repair %s: idem intents repair KEY --export FILE --yes",
		n, plural(n, "record", "records"), where, plural(n, "was", "were"), plural(n, "it", "each"))
}
