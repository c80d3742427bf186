package main

import (
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// TestNackAfterCommitIsRecognised requeues every delivery once, right
// after its shipment committed and before its ack: the redelivery must
// be recognised and acked, never shipped again.
func TestNackAfterCommitIsRecognised(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ids := r.publish("nack-", 20, 1)
	cfg := r.config("-v", "-retry-delay", "0s")
	var mu sync.Mutex
	nacked := map[string]bool{}
	cfg.nackAfterCommit = func(id string) bool {
		mu.Lock()
		defer mu.Unlock()
		first := !nacked[id]
		nacked[id] = true
		return first
	}
	out := r.consume(cfg, time.Second)

	assert.Equal(t, len(ids), countLines(out, "shipped "), out)
	assert.Equal(t, len(ids), countLines(out, "duplicate "), "each redelivery is recognised")
	assert.Equal(t, len(ids), strings.Count(out, "(redelivered: true)"), "every message came back once")
	r.requireExactlyOneShipmentEach(ids)
	r.requireQueueDrained()
}

// TestPublisherResendsAreShippedOnce: a publisher that sends every
// message three times, while a consumer runs and again after it has
// shipped them, gets one shipment per id.
func TestPublisherResendsAreShippedOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	cfg := r.config()
	running, wait := r.startConsumer(cfg, 3*time.Second)
	waitFor(t, "the consumer to start", func() bool { return strings.Contains(running.String(), "consuming ") })
	ids := r.publish("resend-", 15, 3) // consumed as it is published
	wait()
	out := running.String()
	assert.Equal(t, len(ids), countLines(out, "shipped "), out)
	assert.Equal(t, 2*len(ids), countLines(out, "duplicate "), out)
	r.requireExactlyOneShipmentEach(ids)

	// A late resend, long after the first copies were acked.
	r.publish("resend-", 5, 1)
	out = r.consume(cfg, time.Second)
	assert.Zero(t, countLines(out, "shipped "), out)
	assert.Equal(t, 5, countLines(out, "duplicate "), out)
	r.requireExactlyOneShipmentEach(ids)
	r.requireQueueDrained()
}

// TestMessageIDReusedForAnotherOrderIsRejected: the same id on another
// body is two messages sharing an id, rejected rather than shipped or
// redelivered for ever.
func TestMessageIDReusedForAnotherOrderIsRejected(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.publishBody("m-1", []byte(`{"order_id":"o-1","sku":"book","quantity":1}`))
	r.publishBody("m-1", []byte(`{"order_id":"o-1","sku":"book","quantity":7}`))
	r.publishBody("", []byte(`{"order_id":"o-2","sku":"book","quantity":1}`))
	r.publishBody("m-3", []byte(`not an order`))
	out := r.consume(r.config(), time.Second)
	assert.Equal(t, 1, countLines(out, "shipped m-1"), out)
	assert.Equal(t, 1, countLines(out, `rejected "m-1": server: this id was used for another payload`), out)
	assert.Equal(t, 1, countLines(out, `rejected "": no message id`), out)
	assert.Equal(t, 1, countLines(out, `rejected "m-3": the body is not an order`), out)
	r.requireExactlyOneShipmentEach([]string{"m-1"})
	r.requireQueueDrained()
}

// TestStalledDatabaseRequeues reaches PostgreSQL through a proxy that
// stops forwarding: every delivery meanwhile is requeued within the
// store timeout, and all of them ship once the database answers again.
func TestStalledDatabaseRequeues(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	u, err := url.Parse(r.dsn)
	require.NoError(t, err)
	proxy := testenv.StartPauseProxy(t, u.Host)
	u.Host = proxy.Addr()
	cfg := r.config("-store-timeout", "300ms", "-retry-delay", "50ms")
	cfg.dsn = u.String()

	out, wait := r.startConsumer(cfg, 2*time.Second)
	waitFor(t, "the consumer to start", func() bool { return strings.Contains(out.String(), "consuming ") })
	proxy.Pause()
	ids := r.publish("stall-", 5, 1)
	waitFor(t, "deliveries requeued during the stall", func() bool { return countLines(out.String(), "requeued stall-") >= 3 })
	proxy.Resume()
	wait()
	assert.Contains(t, out.String(), "server: the store did not answer reserve within 300ms")
	assert.Equal(t, len(ids), countLines(out.String(), "shipped "), out.String())
	r.requireExactlyOneShipmentEach(ids)
	r.requireQueueDrained()
}
