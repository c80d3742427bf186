package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/saga"
	"github.com/idemkit/idem/server"
)

// handler is the API: POST /orders behind the idempotency layer, and
// GET /operations/{id}, the operation a 202 points at.
func (s *service) handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("POST /orders", s.layer.Wrap("/orders", http.HandlerFunc(s.create)))
	mux.HandleFunc("GET /operations/{id}", s.operation)
	return mux
}

// orderRequest is the body of POST /orders.
type orderRequest struct {
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	ShipTo   string `json:"ship_to"`
}

var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)
var countryCode = regexp.MustCompile(`^[A-Z]{2}$`)

// create is POST /orders. Phase 1 commits the order row and the intent
// of its charge (Client.BeginTx), nothing else; then the saga runs with
// no transaction open (advance); the answer follows the order's state:
// 201 completed, 424 refused by the carrier and refunded, 402 charge
// refused, or 202 with the operation to poll while an outcome is unknown
// or a person must look (needs_operator).
func (s *service) create(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	held, ok := server.HeldFrom(ctx)
	if !ok {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "POST /orders needs an Idempotency-Key"})
		return
	}
	var in orderRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || in.Amount <= 0 || !currencyCode.MatchString(in.Currency) || !countryCode.MatchString(in.ShipTo) {
		held.MarkNotExecuted()
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "an order is {\"amount\": a positive integer, \"currency\": \"EUR\", \"ship_to\": a two-letter country code}"})
		return
	}
	// The order's id, and so the saga's run and every provider key
	// derived from it, comes from the inbound scope and key (Choice 67):
	// a retry of this request finds this order, another tenant's request
	// with the same key another one.
	key, err := server.DownstreamKey(r, "order")
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	o := order{ID: "ord-" + key, Amount: in.Amount, Currency: in.Currency, ShipTo: in.ShipTo}
	if err := s.placeOrder(r, o); err != nil {
		held.MarkNotExecuted() // nothing committed: a retry runs again
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the order was not stored; retry with the same key: " + err.Error()})
		return
	}
	state, err := s.advance(ctx, o.ID)
	if err != nil {
		s.logf("order %s is %s for now: %v", o.ID, state, err)
	}
	s.answer(w, o.ID, state)
}

// placeOrder is phase 1: the order row and the charge's intent, one
// commit. A retry of the request finds both (ON CONFLICT, and BeginTx
// returns the intent committed before).
func (s *service) placeOrder(r *http.Request, o order) error {
	ctx := r.Context()
	charge, err := s.p.charge(ctx, o)
	if err != nil {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `INSERT INTO `+s.t.orders+` (id, amount, currency, ship_to, state) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO NOTHING`, o.ID, o.Amount, o.Currency, o.ShipTo, statePending); err != nil {
		return err
	}
	key := saga.DeriveStepKey(s.sagaSecret, "", o.ID, chargeStep, false)
	if _, err := s.client.BeginTx(ctx, tx, chargeIntent(o.ID), charge, idem.WithIntentKey(key)); err != nil {
		return err
	}
	crashPoint("order-before-commit")
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	crashPoint("order-after-commit")
	return nil
}

// answer writes the order's answer for its state; the layer stores it
// with the inbound key, so a retry gets the same one.
func (s *service) answer(w http.ResponseWriter, id, state string) {
	doc := map[string]string{"id": id, "state": state}
	switch state {
	case stateCompleted:
		writeJSON(w, http.StatusCreated, doc)
	case stateCompensated:
		doc["error"] = "the carrier refused the shipment; the charge was refunded"
		writeJSON(w, http.StatusFailedDependency, doc)
	case stateFailed:
		doc["error"] = "the provider refused the charge"
		writeJSON(w, http.StatusPaymentRequired, doc)
	default:
		w.Header().Set("Location", "/operations/"+id)
		doc["status"] = "pending"
		writeJSON(w, http.StatusAccepted, doc)
	}
}

// operation is GET /operations/{id}: the order's state, in the status
// words idem's client reads (pending, succeeded, failed). An order that
// needs an operator stays pending, with its problem.
func (s *service) operation(w http.ResponseWriter, r *http.Request) {
	var state, problem string
	err := s.pool.QueryRow(r.Context(), `SELECT state, problem FROM `+s.t.orders+` WHERE id = $1`, r.PathValue("id")).Scan(&state, &problem)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such operation"})
		return
	case err != nil:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the orders database did not answer"})
		return
	}
	status := map[string]string{stateCompleted: "succeeded", stateCompensated: "failed", stateFailed: "failed"}[state]
	if status == "" {
		status = "pending"
	}
	doc := map[string]string{"id": r.PathValue("id"), "status": status, "state": state}
	if problem != "" {
		doc["problem"] = problem
	}
	writeJSON(w, http.StatusOK, doc)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// logf writes one line of what the service did.
func (s *service) logf(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.out, format+"\n", args...)
}
