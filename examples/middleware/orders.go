package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idemkit/idem/server"
)

// Order is one order of one caller.
type Order struct {
	ID       string `json:"id"`
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
	Note     string `json:"note,omitempty"`
}

// orderStore keeps orders. create inserts o and completes c, the key's
// completion, in one atomic step: after a crash both are there or neither.
type orderStore interface {
	create(ctx context.Context, principal string, o Order, c server.Completion) error
	list(ctx context.Context, principal string) ([]Order, error)
}

// ordersAPI serves POST and GET /v1/orders behind the idempotency layer.
type ordersAPI struct {
	idem      *server.Middleware
	principal server.PrincipalFunc
	orders    orderStore
	// delay holds every POST this long before its effect; the conformance
	// test sets it so a duplicate arrives while the first still runs.
	delay atomic.Int64
}

func newOrdersAPI(store server.Store, orders orderStore) (*ordersAPI, error) {
	// The layer and the handler agree on who the caller is: the bearer
	// token, stored only as a keyed hash. This API's callers hold API keys
	// that never rotate; an API whose tokens are renewed names the account
	// instead (server.AccountFromContext after its own authentication), or
	// a retry under a renewed token would create a second order.
	principal := server.BearerPrincipal(secret())
	idem, err := server.New(store, server.WithPrincipal(principal), server.WithRetention(24*time.Hour))
	if err != nil {
		return nil, err
	}
	return &ordersAPI{idem: idem, principal: principal, orders: orders}, nil
}

// Handler returns the API: every POST is guarded, GETs pass through.
func (a *ordersAPI) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/orders", a.create)
	mux.HandleFunc("GET /v1/orders", a.list)
	return a.idem.Handler(mux)
}

func (a *ordersAPI) create(w http.ResponseWriter, r *http.Request) {
	time.Sleep(time.Duration(a.delay.Load()))
	principal, err := a.principal(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	var o Order
	if err := json.NewDecoder(r.Body).Decode(&o); err != nil || o.SKU == "" || o.Quantity < 1 {
		// A refusal before any effect: the layer leaves the key free, so a
		// corrected request may reuse it.
		http.Error(w, "want {\"sku\": \"…\", \"quantity\": 1 or more}", http.StatusBadRequest)
		return
	}
	o.ID = "ord_" + strings.ToLower(rand.Text()[:16])
	body, _ := json.Marshal(o)
	resp := server.Response{Status: http.StatusCreated, Body: body, Header: http.Header{
		"Content-Type": {"application/json"}, "Location": {"/v1/orders/" + o.ID}}}
	held, _ := server.HeldFrom(r.Context()) // every POST is guarded
	if err := a.orders.create(r.Context(), principal, o, *held.Completion(resp)); err != nil {
		// Nothing was written: the transaction ran past the store timeout
		// and rolled back, or (ErrFenced) our lease ended and the key was
		// taken over or removed. Nothing ran, so the layer frees the key
		// (if still ours); a retry gets the key's answer, or runs again.
		held.MarkNotExecuted()
		w.Header().Set("Retry-After", "1")
		http.Error(w, "order not created; retry", http.StatusServiceUnavailable)
		return
	}
	held.MarkCompleted()
	for name, values := range resp.Header {
		w.Header()[name] = values
	}
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}

func (a *ordersAPI) list(w http.ResponseWriter, r *http.Request) {
	principal, err := a.principal(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	orders, err := a.orders.list(r.Context(), principal)
	if err != nil {
		http.Error(w, "store unavailable", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": orders, "total": len(orders)})
}
