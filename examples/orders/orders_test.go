package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An order is charged, booked and completed once; a retry of the same
// request is the stored answer; an order the carrier refuses is refunded
// once; each paid order's message is consumed once (with a broker).
func TestOrdersCompleteOrCompensate(t *testing.T) {
	t.Parallel()
	p := newProviders(t)
	r := newRig(t, p)
	// The completer waits, so that the handlers' answers are theirs.
	base, _, _ := r.serve("-complete-after", "5s", "-store-timeout", "1s", "-lease", "3s")
	tb := newTables(r.schema)

	status, doc, err := post(base, "tenant-a", "order-1", `{"amount":1500,"currency":"EUR","ship_to":"FR"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, status, doc)
	id := doc["id"]
	assert.Equal(t, stateCompleted, doc["state"])
	again, doc2, err := post(base, "tenant-a", "order-1", `{"amount":1500,"currency":"EUR","ship_to":"FR"}`)
	require.NoError(t, err)
	assert.Equal(t, status, again)
	assert.Equal(t, doc, doc2, "the retry is the stored answer")

	// The same key from another tenant is another order.
	status, other, err := post(base, "tenant-b", "order-1", `{"amount":1500,"currency":"EUR","ship_to":"FR"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, status)
	assert.NotEqual(t, id, other["id"])

	status, refused, err := post(base, "tenant-a", "order-2", `{"amount":700,"currency":"EUR","ship_to":"ZZ"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusFailedDependency, status, refused)
	assert.Equal(t, stateCompensated, refused["state"])

	for _, o := range []struct {
		id      string
		shipped int
	}{{id, 1}, {other["id"], 1}, {refused["id"], 0}} {
		assert.Equal(t, 1, count(p.provider, o.id), "one charge")
		assert.Equal(t, 1-o.shipped, count(p.provider, "refund-"+o.id), "a refund only when not shipped")
		assert.Equal(t, o.shipped, count(p.carrier, "ship-"+o.id), "one booking")
		assert.Equal(t, 1, r.rows(tb.outbox, o.id), "one paid message written")
		r.waitSettled(o.id)
		if r.queue != "" {
			assert.Equal(t, 1, r.rows(tb.receipts, o.id), "one paid message consumed")
		}
	}

	status, bad, err := post(base, "tenant-a", "order-3", `{"amount":-1}`)
	require.NoError(t, err)
	assert.Equal(t, http.StatusBadRequest, status, bad)
}

// The provider's answers are lost: the API answers 202 with an operation,
// the order stays pending; once the provider answers again the completer
// finishes it (the charge resent with its key: one payment) and the
// operation says succeeded.
func TestOrdersUnknownChargeAnswered202(t *testing.T) {
	t.Parallel()
	p := newProviders(t)
	r := newRig(t, p)
	p.provider.LoseNextResponses(3) // every attempt of the handler's charge
	base, _, _ := r.serve("-complete-after", "300ms", "-store-timeout", "1s", "-lease", "3s")

	status, doc, err := post(base, "tenant-a", "order-lost", `{"amount":1500,"currency":"EUR","ship_to":"DE"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, status, doc)
	assert.Equal(t, "pending", doc["status"])
	id := doc["id"]
	assert.Equal(t, 1, count(p.provider, id), "the charge was made; its answers were lost")

	assert.Equal(t, stateCompleted, r.waitSettled(id))
	resp, err := http.Get(base + "/operations/" + id)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	var op map[string]string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&op))
	assert.Equal(t, "succeeded", op["status"])
	assert.Equal(t, 1, count(p.provider, id), "one payment at the provider")
	assert.Equal(t, 1, count(p.carrier, "ship-"+id))
}
