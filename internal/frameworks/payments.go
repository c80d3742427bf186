package frameworks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemkit/idem/server"
)

// Route is where every stack serves payments.
const Route = "/v1/payments"

// Headers a test request carries besides the idempotency key.
const (
	// TenantHeader names the caller; the layer scopes keys by it.
	TenantHeader = "X-Tenant"
	// MarkerHeader carries a marker unique to one request, which the
	// answer echoes, so a test finds any byte of one request's answer in
	// another's.
	MarkerHeader = "X-Request-Marker"
)

// Kinds of payment, the "kind" field of a request body.
const (
	KindOK       = "ok"       // 201, one effect
	KindDeclined = "declined" // 402, one effect: the decline is recorded
	KindSlow     = "slow"     // 201 after Payments.SlowFor, one effect
	KindInvalid  = "invalid"  // 422 before any effect
)

// Kinds lists every kind, in the order tests deal them to keys.
var Kinds = []string{KindOK, KindDeclined, KindSlow, KindInvalid}

// HasEffect reports whether a payment of kind records an effect.
func HasEffect(kind string) bool { return kind != KindInvalid }

// TenantPrincipal scopes keys by the tenant header.
func TenantPrincipal(r *http.Request) (string, error) {
	t := r.Header.Get(TenantHeader)
	if t == "" {
		return "", fmt.Errorf("send the %s header", TenantHeader)
	}
	return t, nil
}

// PaymentRequest is the body of a payment.
type PaymentRequest struct {
	Account string `json:"account"`
	Amount  int    `json:"amount"`
	Kind    string `json:"kind"`
}

// Answer is what a payment answers: a status and a JSON body.
type Answer struct {
	Status int
	Body   []byte
}

// Error makes an Answer usable as the error a framework handler returns.
func (a *Answer) Error() string { return fmt.Sprintf("payment refused: %d %s", a.Status, a.Body) }

// MarshalJSON lets echo's error handler write the answer's body as is.
func (a *Answer) MarshalJSON() ([]byte, error) { return a.Body, nil }

// Ledger records the effect of one payment, the thing that must happen
// once per key.
type Ledger interface {
	// Record records the effect of the request whose context is ctx,
	// answered with answer.
	Record(ctx context.Context, key, marker string, answer server.Response) error
}

// Payments is the payments handler, written once and mounted in every
// framework.
type Payments struct {
	Ledger  Ledger
	SlowFor time.Duration // how long a KindSlow payment takes

	running atomic.Int64
}

// Running is the number of payments under way.
func (p *Payments) Running() int64 { return p.running.Load() }

// receipt pads every answer, so a leaked fragment is long enough to see.
var receipt = strings.Repeat("thank you for your payment; ", 8)

// Charge runs one payment and returns its answer. A refused payment
// (KindInvalid, or a body that does not decode) is returned as an error
// *Answer, for frameworks whose handlers return errors.
func (p *Payments) Charge(r *http.Request) (*Answer, error) {
	p.running.Add(1)
	defer p.running.Add(-1)
	key := r.Header.Get(server.KeyHeader)
	marker := r.Header.Get(MarkerHeader)
	var req PaymentRequest
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err == nil {
		err = json.Unmarshal(data, &req)
	}
	if err != nil || req.Kind == KindInvalid || req.Amount < 1 {
		return nil, &Answer{Status: http.StatusUnprocessableEntity, Body: mustJSON(map[string]any{
			"type": "invalid_request", "key": key, "marker": marker, "detail": "amount must be 1 or more",
		})}
	}
	if req.Kind == KindSlow {
		time.Sleep(p.SlowFor) // a handler that does not watch its context
	}
	status, outcome := http.StatusCreated, "succeeded"
	if req.Kind == KindDeclined {
		status, outcome = http.StatusPaymentRequired, "declined"
	}
	a := &Answer{Status: status, Body: mustJSON(map[string]any{
		"id": "pay_" + key, "key": key, "marker": marker, "account": req.Account,
		"amount": req.Amount, "status": outcome, "receipt": receipt,
	})}
	resp := server.Response{Status: a.Status, Header: http.Header{"Content-Type": {"application/json"}}, Body: a.Body}
	if err := p.Ledger.Record(r.Context(), key, marker, resp); err != nil {
		return nil, err
	}
	return a, nil
}

// HTTP is the payments handler for net/http: it writes every answer,
// refusals included, itself.
func (p *Payments) HTTP() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, err := p.Charge(r)
		if refusal, ok := err.(*Answer); ok {
			a, err = refusal, nil
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.Status)
		_, _ = w.Write(a.Body)
	})
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// CountingLedger counts effects per key in memory: the effect of a
// handler that calls another system (a card network) the store cannot
// commit with.
type CountingLedger struct {
	mu     sync.Mutex
	counts map[string]int
}

// Record implements Ledger.
func (l *CountingLedger) Record(_ context.Context, key, _ string, _ server.Response) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.counts == nil {
		l.counts = make(map[string]int)
	}
	l.counts[key]++
	return nil
}

// Count returns how many effects key has.
func (l *CountingLedger) Count(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[key]
}
