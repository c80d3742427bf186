package truthtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/idemkit/idem/internal/testenv"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/keystore"
)

// Timings of a run: tiny, so that a scenario takes milliseconds.
const (
	attemptTimeout = 40 * time.Millisecond
	holdAnswer     = attemptTimeout + 25*time.Millisecond
	callBound      = 5 * time.Second
	theAccount     = "acct1"
)

// Result is what one scenario run found.
type Result struct {
	// Violations are the properties the client broke; empty when its
	// record was true.
	Violations []string
	// Trace is what happened, for a report.
	Trace []string
}

// Failed reports whether a property was broken.
func (r Result) Failed() bool { return len(r.Violations) > 0 }

// String gives the violations and the trace.
func (r Result) String() string {
	var b strings.Builder
	for _, v := range r.Violations {
		b.WriteString("VIOLATION: " + v + "\n")
	}
	b.WriteString("trace:\n")
	for _, t := range r.Trace {
		b.WriteString("  " + t + "\n")
	}
	return b.String()
}

// Run plays sc against idem's public API with a fresh server, keystore
// files under dir, and checks the properties.
func Run(sc Scenario, dir string) Result {
	d := newDriver(sc, dir)
	defer d.srv.Close()
	d.run()
	return d.check()
}

type driver struct {
	sc        Scenario
	srv       *Server
	dir, path string
	hc        *http.Client
	client    *idem.Client
	logs      *testenv.SyncBuffer
	secret    string // random part of every token, unique to the run
	querySec  string
	version   int
	intents   []*intentRun
	errs      []string
	trace     []string
	broken    []string
}

// intentRun is what the program knows of one business intent.
type intentRun struct {
	name   string
	keys   []string
	last   idem.State // as the program last saw it, "" before
	told   []told
	amount int
}

// told is what one call told its caller.
type told struct {
	key     string
	success bool // nil error and a final 2xx: "paid"
	failure bool // ErrFinalFailure or ErrKeyReused: "nothing was charged"
	what    string
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func newDriver(sc Scenario, dir string) *driver {
	d := &driver{
		sc:       sc,
		dir:      dir,
		path:     filepath.Join(dir, "keystore.db"),
		logs:     &testenv.SyncBuffer{},
		secret:   "S3cr3t" + randomHex(8),
		querySec: "Q5ecr3t" + randomHex(8),
		version:  1,
	}
	d.srv = NewServer(sc.Dialect, sc.Retention, holdAnswer, sc.Moves, sc.Polls)
	d.srv.WatchSecrets(d.secret, d.querySec)
	d.hc = &http.Client{Timeout: attemptTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	return d
}

func (d *driver) tracef(format string, args ...any) {
	d.trace = append(d.trace, fmt.Sprintf(format, args...))
}

func (d *driver) token() string {
	return fmt.Sprintf("tok_%s_v%d_%s", theAccount, d.version, d.secret)
}

// dialectNamed is the shipped dialect of this name, Draft for any other.
func dialectNamed(name string) dialect.Dialect {
	d, err := dialect.ByName(name)
	if err != nil {
		return dialect.Draft()
	}
	return d
}

// open builds a Client as a program of the scenario's configuration does.
func (d *driver) open() error {
	opts := []idem.Option{
		idem.WithDialect(dialectNamed(d.sc.Dialect)),
		idem.WithHTTPClient(d.hc),
		idem.WithBackoffPolicy(func(int) time.Duration { return time.Millisecond }),
		idem.WithBudget(nil),
		idem.WithMaxAttempts(max(1, d.sc.MaxAttempts)),
		idem.WithRetryAfterCeiling(3 * time.Millisecond),
		idem.WithPolling(time.Millisecond, 20*time.Millisecond),
		idem.WithOperationGrace(d.sc.Grace),
		idem.WithWriteGrace(time.Second),
		idem.WithLogger(slog.New(slog.NewTextHandler(d.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	}
	if d.sc.Retention > 0 {
		opts = append(opts, idem.WithRetention(d.sc.Retention))
	}
	switch {
	case d.sc.Stall > 0 && d.sc.Bolt:
		store, err := keystore.OpenBolt(d.path, &keystore.BoltOptions{NoSync: true})
		if err != nil {
			d.noteErr("OpenBolt", err)
			return err
		}
		opts = append(opts, idem.WithStore(stallStore{Store: store, stall: d.sc.Stall}), idem.WithWriteGrace(d.sc.Stall/2+time.Millisecond))
	case d.sc.Stall > 0:
		opts = append(opts, idem.WithStore(stallStore{Store: keystore.NewMemory(), stall: d.sc.Stall}), idem.WithWriteGrace(d.sc.Stall/2+time.Millisecond))
	case d.sc.Bolt:
		opts = append(opts, idem.WithBoltStore(d.path, &keystore.BoltOptions{NoSync: true}))
	}
	if d.sc.Principal {
		opts = append(opts, idem.WithPrincipal(func(req *http.Request) (string, error) { return account(req), nil }))
	}
	if d.sc.Reconciler {
		opts = append(opts, idem.WithReconciler(d.reconcile))
	}
	c, err := idem.New(opts...)
	if err != nil {
		d.noteErr("New", err)
		return err
	}
	d.client = c
	return nil
}

// reconcile is a Reconciler that asks the provider truthfully (its
// ledger), as one that looks the payment up by its key does.
func (d *driver) reconcile(_ context.Context, in *idem.Intent) (idem.Reconciliation, error) {
	if n := d.srv.Effects(theAccount, in.Key); n > 0 {
		return idem.Reconciliation{Outcome: idem.OutcomeSucceeded, Evidence: fmt.Sprintf("provider has %d payment(s) for the key", n)}, nil
	}
	return idem.Reconciliation{Outcome: idem.OutcomeFailed, Evidence: "provider has no payment for the key"}, nil
}

func (d *driver) close() {
	if d.client == nil {
		return
	}
	if err := d.client.Close(); err != nil {
		d.noteErr("Close", err)
	}
	d.client = nil
	d.hc.CloseIdleConnections()
}

func (d *driver) noteErr(where string, err error) {
	if err != nil {
		d.errs = append(d.errs, err.Error())
		d.tracef("  %s: %v", where, err)
	}
}

// request is the payment request of intent i, with the credentials a
// program has now.
func (d *driver) request(in *intentRun) *http.Request {
	u := d.srv.Main.URL + "/v1/payments"
	if d.sc.SecretQuery {
		u += "?api_key=" + d.querySec
	}
	body := fmt.Sprintf(`{"intent":%q,"amount":%d,"currency":"EUR"}`, in.name, in.amount)
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if d.sc.Dialect == "adyen" {
		req.Header.Set("X-API-Key", d.token())
	} else {
		req.Header.Set("Authorization", "Bearer "+d.token())
	}
	return req
}

func (d *driver) run() {
	if err := d.open(); err != nil {
		return
	}
	for n, st := range d.sc.Steps {
		if d.client == nil {
			return
		}
		d.step(n, st)
	}
}

func (d *driver) step(n int, st Step) {
	ctx := context.Background()
	var in *intentRun
	if st.I >= 0 && st.I < len(d.intents) {
		in = d.intents[st.I]
	}
	switch st.Kind {
	case StepNew:
		in = &intentRun{name: fmt.Sprintf("order-%d", len(d.intents)), amount: 1000 + len(d.intents)}
		d.intents = append(d.intents, in)
		d.tracef("step %d: new intent %s", n, in.name)
		d.call(ctx, in)
	case StepRerun:
		if in == nil || in.last == idem.Succeeded || in.last == idem.Failed {
			return
		}
		d.tracef("step %d: re-run %s (last seen %s)", n, in.name, in.last)
		d.call(ctx, in)
	case StepRestart:
		d.tracef("step %d: restart", n)
		d.close()
		_ = d.open()
	case StepRefresh:
		d.version++
		d.tracef("step %d: credentials refreshed (v%d)", n, d.version)
	case StepSettle:
		if in == nil || len(in.keys) == 0 {
			return
		}
		key := in.keys[len(in.keys)-1]
		s := idem.Settlement{Outcome: idem.OutcomeFailed, By: "operator", Note: "no payment in the provider's dashboard"}
		if d.srv.Effects(theAccount, key) > 0 {
			s = idem.Settlement{Outcome: idem.OutcomeSucceeded, By: "operator", Note: "payment found in the provider's dashboard"}
		}
		got, err := d.client.Settle(ctx, key, s)
		d.tracef("step %d: operator settles %s %s", n, in.name, s.Outcome)
		d.noteErr("Settle", err)
		if got != nil {
			in.last = got.State
		}
	case StepReconcile:
		if in == nil || len(in.keys) == 0 || !d.sc.Reconciler {
			return
		}
		got, err := d.client.Resume(ctx, in.keys[len(in.keys)-1])
		d.noteErr("Resume", err)
		if err != nil {
			return
		}
		d.tracef("step %d: reconcile %s", n, in.name)
		resp, err := d.client.Reconcile(ctx, got)
		drain(resp)
		d.noteErr("Reconcile", err)
		in.last = got.State
	case StepPurge:
		d.tracef("step %d: purge", n)
		d.purge()
	case StepWait:
		d.tracef("step %d: wait %s", n, st.Wait)
		time.Sleep(st.Wait)
	}
}

// call begins intent in (again) and sends it, as a program does.
func (d *driver) call(ctx context.Context, in *intentRun) {
	bound := callBound
	if d.sc.Deadline > 0 {
		bound = d.sc.Deadline
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	it, err := d.client.Begin(ctx, in.name, d.request(in))
	if err != nil {
		d.noteErr("Begin", err)
		var unc *idem.UncertainIntentError
		if errors.As(err, &unc) && unc.Key != "" {
			in.addKey(unc.Key)
		}
		return
	}
	in.addKey(it.Key)
	resp, err := d.client.Do(ctx, it)
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	drain(resp)
	d.noteErr("Do", err)
	d.tracef("  %s key %s: Do -> %d, err %v, state %s", in.name, short(it.Key), status, err != nil, it.State)
	in.last = it.State
	switch {
	case err == nil && status >= 200 && status <= 299 && status != 202:
		in.told = append(in.told, told{key: it.Key, success: true, what: fmt.Sprintf("Do returned %d with a nil error", status)})
	case errors.Is(err, idem.ErrFinalFailure) || errors.Is(err, idem.ErrKeyReused):
		in.told = append(in.told, told{key: it.Key, failure: true, what: "Do returned " + errName(err)})
	}
}

func errName(err error) string {
	switch {
	case errors.Is(err, idem.ErrOperationFailed):
		return "ErrOperationFailed"
	case errors.Is(err, idem.ErrKeyReused):
		return "ErrKeyReused"
	}
	return "ErrFinalFailure"
}

func (in *intentRun) addKey(k string) {
	for _, have := range in.keys {
		if have == k {
			return
		}
	}
	in.keys = append(in.keys, k)
}

func drain(resp *http.Response) {
	if resp != nil && resp.Body != nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

// purge does what `idem intents purge` does with the server's
// retention: the Client is closed, the file purged, the Client opened
// again.
func (d *driver) purge() {
	d.close()
	retention := d.sc.Retention
	if retention == 0 {
		retention = idem.DefaultRetention
	}
	store, err := keystore.OpenBolt(d.path, &keystore.BoltOptions{NoSync: true})
	if err != nil {
		d.noteErr("OpenBolt", err)
	} else {
		now := time.Now()
		res, err := store.Purge(context.Background(), keystore.PurgeRequest{OlderThan: now, KeepNamesAfter: now.Add(-retention)})
		d.noteErr("Purge", err)
		d.tracef("  purged: %d deleted, %d tombstoned", res.Deleted, res.Tombstoned)
		d.noteErr("close", store.Close())
	}
	_ = d.open()
}

// check reads the client's final record and holds it against the ledger.
func (d *driver) check() Result {
	ctx := context.Background()
	if d.client == nil {
		_ = d.open()
	}
	states := make(map[string]*idem.Intent)
	if d.client != nil {
		for _, in := range d.intents {
			for _, k := range in.keys {
				got, err := d.client.Resume(ctx, k)
				if err == nil {
					states[k] = got
					if got.LastError != "" {
						d.errs = append(d.errs, got.LastError)
					}
				} else if !errors.Is(err, keystore.ErrNotFound) {
					d.noteErr("Resume", err)
				}
			}
		}
	}
	d.close()

	for _, in := range d.intents {
		if n := d.srv.Ledger.Intent(in.name); n > 1 {
			d.violate("intent %s has %d effects in the ledger (keys %s)", in.name, n, shortKeys(in.keys))
		}
		for _, k := range in.keys {
			n := d.srv.Effects(theAccount, k)
			if n > 1 {
				d.violate("key %s of %s was executed %d times", short(k), in.name, n)
			}
			got := states[k]
			if got == nil {
				continue
			}
			switch got.State {
			case idem.Failed:
				if n != 0 {
					d.violate("%s (key %s) is recorded Failed but the ledger has %d effect(s); last error %q", in.name, short(k), n, got.LastError)
				}
			case idem.Succeeded:
				if n != 1 {
					d.violate("%s (key %s) is recorded Succeeded but the ledger has %d effect(s)", in.name, short(k), n)
				}
			}
		}
		for _, t := range in.told {
			n := d.srv.Effects(theAccount, t.key)
			switch {
			case t.failure && n != 0:
				d.violate("%s (key %s): %s (nothing charged) but the ledger has %d effect(s)", in.name, short(t.key), t.what, n)
			case t.success && n != 1:
				d.violate("%s (key %s): %s (paid) but the ledger has %d effect(s)", in.name, short(t.key), t.what, n)
			}
		}
	}
	d.checkSecrets()
	for _, p := range d.srv.Problems() {
		d.violate("%s", p)
	}
	trace := append(d.trace, "server:")
	trace = append(trace, d.srv.Trace()...)
	return Result{Violations: d.broken, Trace: trace}
}

func shortKeys(keys []string) string {
	var s []string
	for _, k := range keys {
		s = append(s, short(k))
	}
	return strings.Join(s, ",")
}

func (d *driver) violate(format string, args ...any) {
	d.broken = append(d.broken, fmt.Sprintf(format, args...))
}

// checkSecrets looks for every secret in the keystore file, the logs and
// every error the program was given.
func (d *driver) checkSecrets() {
	secrets := map[string]string{"the credential": d.secret, "the secret query parameter": d.querySec}
	var file []byte
	if d.sc.Bolt {
		file, _ = os.ReadFile(d.path)
	}
	logs := d.logs.String()
	for what, sec := range secrets {
		if bytes.Contains(file, []byte(sec)) {
			d.violate("%s is in the keystore file", what)
		}
		if strings.Contains(logs, sec) {
			d.violate("%s is in the logs", what)
		}
		for _, e := range d.errs {
			if strings.Contains(e, sec) {
				d.violate("%s is in an error: %.200s", what, e)
				break
			}
		}
	}
}
