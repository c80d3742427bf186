package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore/pgkeystore"
	"github.com/idemkit/idem/saga"
)

// The carrier refuses the shipment and the provider refuses the refund:
// the order is reported as needing an operator (202, the operation
// pending with its problem, the completer naming it on every pass),
// never dropped; once a person records the refund made by hand
// (Saga.ResolveStep, or `idem runs resolve`), the completer finishes the
// order compensated.
func TestOrdersRefusedRefundNeedsAnOperator(t *testing.T) {
	t.Parallel()
	p := newProviders(t)
	r := newRig(t, p)
	// The completer leaves the order to its handler for a second.
	base, out, _ := r.serve("-complete-after", "1s", "-store-timeout", "1s", "-lease", "3s")

	// Hold the booking at the carrier until the provider is set to
	// refuse the next request: the refund.
	p.carrier.SetHandlerDelay(500 * time.Millisecond)
	type answer struct {
		status int
		doc    map[string]string
		err    error
	}
	answered := make(chan answer, 1)
	go func() {
		status, doc, err := post(base, "tenant-a", "order-op", `{"amount":1200,"currency":"EUR","ship_to":"ZZ"}`)
		answered <- answer{status, doc, err}
	}()
	waitFor(t, func() string { return "the booking to reach the carrier" }, func() bool { return p.carrier.Holding() == 1 })
	p.provider.FailNext(1, http.StatusBadRequest, 0)
	p.carrier.SetHandlerDelay(0)
	a := <-answered
	require.NoError(t, a.err)
	require.Equal(t, http.StatusAccepted, a.status, a.doc)
	id := a.doc["id"]
	assert.Equal(t, stateNeedsOperator, a.doc["state"])
	state, problem := r.orderState(id)
	assert.Equal(t, stateNeedsOperator, state)
	assert.Contains(t, problem, "needs an operator", out.String())
	assert.Zero(t, count(p.provider, "refund-"+id), "the refund was refused")
	waitFor(t, func() string { return "the completer to report the order" }, func() bool {
		return strings.Contains(out.String(), "order "+id+" needs an operator")
	})

	// A person refunds by hand and records it.
	store, err := pgkeystore.Open(context.Background(), r.dsn, &pgkeystore.Options{Schema: r.schema})
	require.NoError(t, err)
	c, err := idem.New(idem.WithStore(store))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	s, err := saga.New(c, saga.WithKeySecret([]byte("orders-test-secret-0123456789")))
	require.NoError(t, err)
	require.NoError(t, s.ResolveStep(context.Background(), id, chargeStep, saga.Resolution{By: "ops@example", Note: "refunded by hand, ticket 7"}))

	waitFor(t, func() string { return "the completer to finish the order" }, func() bool {
		state, _ := r.orderState(id)
		return state == stateCompensated
	})
	assert.Equal(t, 1, count(p.provider, id), "one charge")
	assert.Zero(t, count(p.provider, "refund-"+id), "no refund sent after the person's verdict")
	assert.Zero(t, count(p.carrier, "ship-"+id))
}
