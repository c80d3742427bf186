package idem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

// ordersAPI is the skeleton of an API that takes orders behind the
// idempotency layer and charges a provider: one transaction writes the
// order and the intent of the charge, the charge is sent after it
// commits, and a second transaction completes the inbound key with the
// order's new state. While the charge's outcome is unknown the API
// answers 202 with an operation the client polls.
type ordersAPI struct {
	k        *txKeystore
	store    *pgstore.Store
	client   *Client // the API's own client of the provider
	provider string
	lastErr  atomic.Pointer[error] // the error of the handler's last Do
}

// create is POST /orders.
func (a *ordersAPI) create(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	held, ok := server.HeldFrom(ctx)
	if !ok {
		http.Error(w, "no idempotency key", http.StatusBadRequest)
		return
	}
	key, err := server.DownstreamKey(r, "charge")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	orderID := "ord_" + key
	charge, err := http.NewRequestWithContext(ctx, http.MethodPost, a.provider+"/v1/payments",
		strings.NewReader(fmt.Sprintf(`{"amount":1500,"currency":"EUR","reference":%q}`, orderID)))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	charge.Header.Set("Content-Type", "application/json")
	charge.Header.Set("Authorization", "Bearer "+testToken)

	// Phase 1: the order and the intent of its charge, one commit.
	var in *Intent
	err = pgx.BeginFunc(ctx, a.k.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO "+a.k.orders+" (id, intent_key, state) VALUES ($1, $2, 'pending') ON CONFLICT (id) DO NOTHING", orderID, key); err != nil {
			return err
		}
		in, err = a.client.BeginTx(ctx, tx, "orders/"+orderID+"/charge", charge, WithIntentKey(key))
		return err
	})
	if err != nil {
		held.MarkNotExecuted() // nothing committed: a retry runs again
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}

	// Phase 2: the charge, outside any transaction. Where it stands is
	// the intent's state; the error only says why it is not settled.
	_, doErr := a.client.Do(ctx, in)
	a.lastErr.Store(&doErr)
	header := http.Header{"Content-Type": {"application/json"}}
	var answer server.Response
	newState := ""
	switch in.State {
	case Succeeded:
		newState = "paid"
		answer = server.Response{Status: http.StatusCreated, Header: header, Body: fmt.Appendf(nil, `{"id":%q,"status":"paid"}`, orderID)}
	case Failed:
		newState = "failed"
		answer = server.Response{Status: http.StatusPaymentRequired, Header: header, Body: fmt.Appendf(nil, `{"id":%q,"status":"failed"}`, orderID)}
	default:
		// Unknown, or not sent yet: the order stays pending; the client
		// polls its operation and the completer finishes the charge.
		header.Set("Location", "/operations/"+orderID)
		answer = server.Response{Status: http.StatusAccepted, Header: header, Body: fmt.Appendf(nil, `{"id":%q,"status":"pending"}`, orderID)}
	}

	// Phase 3: the inbound key's answer and the order's new state, one
	// commit.
	tctx, cancel := held.Context(ctx)
	defer cancel()
	err = pgx.BeginFunc(tctx, a.k.pool, func(tx pgx.Tx) error {
		if err := a.store.CompleteTx(tctx, tx, *held.Completion(answer)); err != nil {
			return err
		}
		if newState == "" {
			return nil
		}
		_, err := tx.Exec(tctx, "UPDATE "+a.k.orders+" SET state = $2 WHERE id = $1 AND state = 'pending'", orderID, newState)
		return err
	})
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	held.MarkCompleted()
	for name, values := range answer.Header {
		w.Header()[name] = values
	}
	w.WriteHeader(answer.Status)
	_, _ = w.Write(answer.Body)
}

// operation is GET /operations/{id}: the order's state in the words
// idem's client reads.
func (a *ordersAPI) operation(w http.ResponseWriter, r *http.Request) {
	var state string
	err := a.k.pool.QueryRow(r.Context(), "SELECT state FROM "+a.k.orders+" WHERE id = $1", r.PathValue("id")).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	status := map[string]string{"pending": "pending", "paid": "succeeded", "failed": "failed"}[state]
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"id": r.PathValue("id"), "status": status})
}

// complete is the completer: it takes up the charges no live process
// holds, sends them with their keys, and settles their orders.
func (a *ordersAPI) complete(ctx context.Context, worker *Client) (int, error) {
	taken, err := worker.ClaimPending(ctx, 10)
	if err != nil {
		return 0, err
	}
	done := 0
	for _, in := range taken {
		if _, err := worker.Do(ctx, in); err != nil {
			return done, err
		}
		if _, err := a.k.pool.Exec(ctx, "UPDATE "+a.k.orders+" SET state = 'paid' WHERE intent_key = $1 AND state = 'pending'", in.Key); err != nil {
			return done, err
		}
		done++
	}
	return done, nil
}

// The provider's answer to the charge is lost: the API answers 202 with
// an operation, the order stays pending, and the inbound client's intent
// is Accepted. The completer resends the charge with its key (the
// provider replays it: one payment) and marks the order paid; the inbound
// client's next poll of the operation sees it succeeded.
func TestBeginTxUnknownChargeIsAnswered202AndSettledByTheCompleter(t *testing.T) {
	t.Parallel()
	k := newTxKeystore(t)
	provider := idemtest.NewServer(t)
	store, err := pgstore.New(t.Context(), k.pool, pgstore.WithSchema(k.schema))
	require.NoError(t, err)
	a := &ordersAPI{k: k, store: store, provider: provider.URL,
		client: k.client(t, WithMaxAttempts(2))}
	layer, err := server.New(store, server.WithDownstreamSecret([]byte("orders-api-downstream-secret")),
		server.WithPrincipal(func(r *http.Request) (string, error) { return r.Header.Get("X-Tenant"), nil }))
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("POST /orders", layer.Wrap("/orders", http.HandlerFunc(a.create)))
	mux.HandleFunc("GET /operations/{id}", a.operation)
	api := httptest.NewServer(mux)
	t.Cleanup(api.Close)

	inbound := newTestClient(t, WithPolling(10*time.Millisecond, 50*time.Millisecond), WithRetryAfterCeiling(10*time.Millisecond))
	req, err := http.NewRequest(http.MethodPost, api.URL+"/orders", strings.NewReader(`{"sku":"rocket","quantity":1}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Tenant", "tenant-a")
	order, err := inbound.Begin(t.Context(), "checkout-77", req)
	require.NoError(t, err)

	provider.LoseNextResponses(10) // the charge is made, its answers lost
	resp, err := inbound.Do(t.Context(), order)
	require.NoError(t, err, "a 202 still pending at the polling bound is no error")
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, Accepted, order.State)
	assert.Equal(t, 1, provider.PaymentCount(), "the charge was made; its answer lost")
	require.NotNil(t, a.lastErr.Load())
	require.ErrorIs(t, *a.lastErr.Load(), ErrOutcomeUnknown, "the API's charge was unknown")
	var state string
	require.NoError(t, k.pool.QueryRow(t.Context(), "SELECT state FROM "+k.orders).Scan(&state))
	assert.Equal(t, "pending", state)

	provider.ClearFaults()
	completer := k.client(t, WithRequestEditor(func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+testToken)
		return nil
	}))
	n, err := a.complete(t.Context(), completer)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the API's Do released the intent: the fleet takes it at once")

	resp, err = inbound.Do(t.Context(), order)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, Succeeded, order.State)
	assert.Contains(t, readBody(t, resp), `"status":"succeeded"`)
	assert.Equal(t, 1, provider.PaymentCount(), "one payment at the provider")
	assert.Equal(t, 1, k.orderCount(t), "one order")
}
