package frameworks

import (
	"bytes"
	"compress/gzip"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemkit/idem/server"
)

// keyPlan is one idempotency key of a load and the payment it asks for.
type keyPlan struct {
	key, tenant, kind string
	body              []byte
	dups              int // concurrent duplicates sent
}

// reply is one answer a client got, its body decompressed.
type reply struct {
	marker   string // the marker the request carried
	status   int
	replayed bool
	encoding string
	body     []byte
	err      error // a transport error, instead of an answer
}

// load sends dups concurrent duplicates of every key and retries each
// until it gets a final answer, as a client does.
type load struct {
	keys    []keyPlan
	base    func() string // the service's URL, which a restart may change
	client  *http.Client
	retries atomic.Int64
	// broken, if set, reports that a key has more effects than one, so
	// its duplicates stop trying.
	broken func(key string) bool

	mu      sync.Mutex
	replies map[string][]reply // key → every answer, in arrival order
	finals  map[string][]reply // key → final answers
	markers map[string]string  // marker → key
}

// planKeys makes rounds keys of each kind that has an effect, with dups
// concurrent duplicates each, and refused keys with refusedDups each:
// every refused request runs the handler, and a framework that writes its
// error after the layer writes it late each time.
func planKeys(cell string, rounds, dups, refused, refusedDups int) []keyPlan {
	run := randomHex(4)
	var keys []keyPlan
	add := func(kind string, dups int) {
		i := len(keys)
		tenant := fmt.Sprintf("tenant-%d", i%3)
		keys = append(keys, keyPlan{
			key:    fmt.Sprintf("%s-%s-%s-%d", cell, run, kind, i),
			tenant: tenant,
			kind:   kind,
			body:   mustJSON(PaymentRequest{Account: "acct_" + tenant, Amount: 100 + i, Kind: kind}),
			dups:   dups,
		})
	}
	for range rounds {
		for _, kind := range Kinds {
			if HasEffect(kind) {
				add(kind, dups)
			}
		}
	}
	for range refused {
		add(KindInvalid, refusedDups)
	}
	return keys
}

func newLoad(keys []keyPlan, base func() string) *load {
	return &load{
		keys: keys, base: base,
		client: &http.Client{
			Timeout: 10 * time.Second,
			Transport: &http.Transport{
				DisableCompression:  true, // the test reads the encoding itself
				MaxIdleConnsPerHost: 64,
			},
		},
		replies: make(map[string][]reply),
		finals:  make(map[string][]reply),
		markers: make(map[string]string),
	}
}

// run sends the load and returns when every duplicate has a final answer,
// gave up on a broken key, or ctx ended; it reports how many got no final
// answer.
func (l *load) run(ctx context.Context) (unanswered int) {
	var wg sync.WaitGroup
	var missing atomic.Int64
	for _, k := range l.keys {
		for range k.dups {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if !l.duplicate(ctx, k) {
					missing.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	l.client.CloseIdleConnections()
	return int(missing.Load())
}

// duplicate sends one duplicate of k until a final answer: 409 (in
// progress), 503 (store unavailable, or a timeout) and transport errors
// are retried with the same key and payload, each try with a new marker,
// until ctx ends or the key has broken the one-effect rule (whatever
// follows, the cell has failed).
func (l *load) duplicate(ctx context.Context, k keyPlan) bool {
	for try := 1; ; try++ {
		r := l.send(ctx, k)
		l.mu.Lock()
		l.replies[k.key] = append(l.replies[k.key], r)
		final := r.err == nil && r.status != http.StatusConflict && r.status != http.StatusServiceUnavailable
		if final {
			l.finals[k.key] = append(l.finals[k.key], r)
		}
		l.mu.Unlock()
		if final {
			return true
		}
		if l.broken != nil && l.broken(k.key) {
			return false
		}
		l.retries.Add(1)
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff(try)):
		}
	}
}

// backoff is the pause before the next try, growing from 20 ms to 150 ms
// with jitter, so duplicates waiting on one key do not swamp the store.
func backoff(try int) time.Duration {
	d := 20 * time.Millisecond
	for range try - 1 {
		d = d * 3 / 2
	}
	return min(d, 150*time.Millisecond) + rand.N(30*time.Millisecond)
}

func (l *load) send(ctx context.Context, k keyPlan) reply {
	marker := "mk" + randomHex(8)
	l.mu.Lock()
	l.markers[marker] = k.key
	l.mu.Unlock()
	r := reply{marker: marker}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.base()+Route, bytes.NewReader(k.body))
	if err != nil {
		r.err = err
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set(server.KeyHeader, k.key)
	req.Header.Set(TenantHeader, k.tenant)
	req.Header.Set(MarkerHeader, marker)
	resp, err := l.client.Do(req)
	if err != nil {
		r.err = err
		return r
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		r.err = err
		return r
	}
	r.status = resp.StatusCode
	r.replayed = resp.Header.Get(server.ReplayedHeader) == "true"
	r.encoding = resp.Header.Get("Content-Encoding")
	r.body = raw
	if r.encoding == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err == nil {
			r.body, err = io.ReadAll(zr)
		}
		if err != nil {
			r.body = raw
			r.encoding = "gzip (undecodable: " + err.Error() + ")"
		}
	}
	return r
}

// markerPattern finds the markers in an answer.
var markerPattern = regexp.MustCompile(`mk[0-9a-f]{16}`)

// findings collects the invariants a cell broke, a few examples each.
type findings struct {
	byRule map[string][]string
}

func (f *findings) add(rule, format string, args ...any) {
	if f.byRule == nil {
		f.byRule = make(map[string][]string)
	}
	f.byRule[rule] = append(f.byRule[rule], fmt.Sprintf(format, args...))
}

// report fails t with every broken invariant, or does nothing.
func (f *findings) report(t *testing.T) {
	t.Helper()
	rules := make([]string, 0, len(f.byRule))
	for rule := range f.byRule {
		rules = append(rules, rule)
	}
	sort.Strings(rules)
	for _, rule := range rules {
		cases := f.byRule[rule]
		shown := cases[:min(len(cases), 3)]
		t.Errorf("%s: %d case(s), e.g.\n    %s", rule, len(cases), strings.Join(shown, "\n    "))
	}
}

// Rules a cell is held to.
const (
	ruleOneEffect   = "one effect per key"
	ruleReplay      = "replays byte-identical to the first answer"
	ruleHandlers    = "the final answer is the handler's"
	ruleNoCrossTalk = "no byte of one request's answer in another's"
	ruleRefusal     = "a refusal is never stored"
	ruleAnswered    = "every duplicate answered in time"
)

// check holds the load's answers and effects to the invariants.
// effects(key) counts key's effects; lateErrors says the framework writes
// a returned error after the layer, which then cannot pass it on.
func (l *load) check(f *findings, effects func(key string) int, lateErrors bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range l.keys {
		want := 0
		if HasEffect(k.kind) {
			want = 1
		}
		if got := effects(k.key); got != want {
			f.add(ruleOneEffect, "%s key %s: %d effects, want %d", k.kind, k.key, got, want)
		}
		for _, r := range l.replies[k.key] {
			if r.err != nil {
				continue
			}
			for _, m := range markerPattern.FindAllString(string(r.body), -1) {
				if owner := l.markers[m]; owner != k.key {
					f.add(ruleNoCrossTalk, "key %s got %d %q carrying marker %s of key %q", k.key, r.status, clip(r.body), m, owner)
				}
			}
		}
		finals := l.finals[k.key]
		if rs := l.replies[k.key]; len(finals) < k.dups && len(rs) > 0 {
			last := rs[len(rs)-1]
			f.add(ruleAnswered, "%s key %s: %d of %d duplicates without a final answer; last answer %d %q (err %v)",
				k.kind, k.key, k.dups-len(finals), k.dups, last.status, clip(last.body), last.err)
		}
		if k.kind == KindInvalid {
			l.checkRefusals(f, k, finals, lateErrors)
			continue
		}
		l.checkPayments(f, k, finals)
	}
}

// checkPayments holds the final answers of a payment key: the handler's
// status and document, one execution at most, every replay identical.
func (l *load) checkPayments(f *findings, k keyPlan, finals []reply) {
	wantStatus := http.StatusCreated
	if k.kind == KindDeclined {
		wantStatus = http.StatusPaymentRequired
	}
	executed := 0
	for _, r := range finals {
		if !r.replayed {
			executed++
		}
		if r.status != wantStatus || !bytes.Contains(r.body, []byte(`"key":"`+k.key+`"`)) {
			f.add(ruleHandlers, "%s key %s: %d %q (replayed %v, encoding %q), want %d with its payment",
				k.kind, k.key, r.status, clip(r.body), r.replayed, r.encoding, wantStatus)
		}
	}
	if executed > 1 {
		f.add(ruleReplay, "%s key %s: %d answers not marked replayed, want at most 1", k.kind, k.key, executed)
	}
	for _, r := range finals[min(1, len(finals)):] {
		if r.status != finals[0].status || !bytes.Equal(r.body, finals[0].body) {
			f.add(ruleReplay, "%s key %s: %d %q after %d %q", k.kind, k.key, r.status, clip(r.body), finals[0].status, clip(finals[0].body))
		}
	}
}

// checkRefusals holds the answers of a refused key: each is the refusal
// of its own request, never a stored answer replayed. Where the framework
// writes the error after the layer, the layer cannot see it and answers
// for the handler; the answer must still refuse.
func (l *load) checkRefusals(f *findings, k keyPlan, finals []reply, lateErrors bool) {
	for _, r := range finals {
		if r.replayed {
			f.add(ruleRefusal, "invalid key %s: %d %q replayed", k.key, r.status, clip(r.body))
		}
		switch {
		case lateErrors && r.status < 400:
			f.add(ruleHandlers, "invalid key %s: %d %q, want a refusal (4xx or 5xx)", k.key, r.status, clip(r.body))
		case !lateErrors && (r.status != http.StatusUnprocessableEntity || !bytes.Contains(r.body, []byte(r.marker))):
			f.add(ruleHandlers, "invalid key %s: %d %q, want 422 naming its marker %s", k.key, r.status, clip(r.body), r.marker)
		}
	}
}

// summary is one line of figures about the load.
func (l *load) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	sent, replayed, dups := 0, 0, 0
	for _, k := range l.keys {
		dups += k.dups
	}
	for _, rs := range l.replies {
		sent += len(rs)
		for _, r := range rs {
			if r.replayed {
				replayed++
			}
		}
	}
	return fmt.Sprintf("%d keys, %d duplicates in all: %d requests, %d retried, %d replays", len(l.keys), dups, sent, l.retries.Load(), replayed)
}

func clip(b []byte) string {
	if len(b) > 120 {
		return string(b[:120]) + "…"
	}
	return string(b)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}
