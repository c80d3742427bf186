package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

// telemetryRig records a layer's spans and metrics with the SDK's
// in-memory span recorder and manual reader.
type telemetryRig struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
	tp     *sdktrace.TracerProvider
	opts   []server.Option
}

func newTelemetryRig(t *testing.T) *telemetryRig {
	t.Helper()
	r := &telemetryRig{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() {
		_ = r.tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	r.opts = []server.Option{server.WithTracerProvider(r.tp), server.WithMeterProvider(mp)}
	return r
}

// underServerSpan wraps h as otelhttp does: each request runs under a
// SERVER span of its own.
func (r *telemetryRig) underServerSpan(h http.Handler) http.Handler {
	tracer := r.tp.Tracer("test-http")
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, span := tracer.Start(req.Context(), "POST "+paymentsRoute, trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		h.ServeHTTP(w, req.WithContext(ctx))
	})
}

func (r *telemetryRig) metrics(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	return rm
}

func metricNamed(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

// count sums the int64 counter name over the points carrying every one of
// want.
func count(t *testing.T, rm metricdata.ResourceMetrics, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	m, ok := metricNamed(rm, name)
	if !ok {
		return 0
	}
	sum, ok := m.Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is an int64 sum", name)
	var total int64
	for _, dp := range sum.DataPoints {
		if carries(dp.Attributes, want) {
			total += dp.Value
		}
	}
	return total
}

// recordings counts what the float64 histogram name recorded over the
// points carrying every one of want.
func recordings(t *testing.T, rm metricdata.ResourceMetrics, name string, want ...attribute.KeyValue) uint64 {
	t.Helper()
	m, ok := metricNamed(rm, name)
	if !ok {
		return 0
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a float64 histogram", name)
	var total uint64
	for _, dp := range h.DataPoints {
		if carries(dp.Attributes, want) {
			total += dp.Count
		}
	}
	return total
}

func carries(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

func decision(d string) attribute.KeyValue { return attribute.String("idem.decision", d) }

func spanValue(s sdktrace.ReadOnlySpan, key attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

func ended(r *telemetryRig, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// assertNoRawKey fails when key shows in any span attribute or metric
// point attribute.
func assertNoRawKey(t *testing.T, r *telemetryRig, rm metricdata.ResourceMetrics, key string) {
	t.Helper()
	for _, s := range r.spans.Ended() {
		for _, kv := range s.Attributes() {
			assert.NotContains(t, kv.Value.Emit(), key, "span %s attribute %s", s.Name(), kv.Key)
		}
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			var sets []attribute.Set
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					sets = append(sets, dp.Attributes)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					sets = append(sets, dp.Attributes)
				}
			}
			for _, set := range sets {
				for _, kv := range set.ToSlice() {
					assert.NotContains(t, kv.Value.Emit(), key, "metric %s attribute %s", m.Name, kv.Key)
				}
			}
		}
	}
}

// A duplicate is answered from the store and counted as replayed; the
// first request as executed, its answer stored.
func TestTelemetryDuplicateIsCountedAsReplayed(t *testing.T) {
	t.Parallel()
	tel := newTelemetryRig(t)
	rig := newRig(t, tel.opts...)
	h := tel.underServerSpan(rig.idem.Wrap(paymentsRoute, &countingHandler{}))

	const key = "otel-dup-key-7f3a9c"
	first := serve(h, post(key, `{"amount":100}`))
	require.Equal(t, http.StatusCreated, first.Code)
	second := serve(h, post(key, `{"amount":100}`))
	require.Equal(t, http.StatusCreated, second.Code)
	require.True(t, replayed(second))

	rm := tel.metrics(t)
	assert.Equal(t, int64(1), count(t, rm, "idem.server.requests", decision("executed"), attribute.String("idem.settlement", "stored")))
	assert.Equal(t, int64(1), count(t, rm, "idem.server.requests", decision("replayed"), attribute.String("http.route", paymentsRoute)))
	assert.Equal(t, int64(2), count(t, rm, "idem.server.requests"))
	assert.Equal(t, uint64(2), recordings(t, rm, "idem.server.store.duration", attribute.String("idem.store.operation", "reserve")))
	assert.Equal(t, uint64(1), recordings(t, rm, "idem.server.store.duration", attribute.String("idem.store.operation", "complete")))
	assert.Zero(t, count(t, rm, "idem.server.store.errors"))

	layer := ended(tel, "idem.server")
	outer := ended(tel, "POST "+paymentsRoute)
	require.Len(t, layer, 2)
	require.Len(t, outer, 2)
	for i, s := range layer {
		assert.Equal(t, outer[i].SpanContext().SpanID(), s.Parent().SpanID(), "idem.server is a child of the request's span")
		assert.Equal(t, server.TelemetryKeyHash(key), spanValue(s, "idem.key.hash"))
	}
	assert.Equal(t, "executed", spanValue(layer[0], "idem.decision"))
	assert.Equal(t, "replayed", spanValue(layer[1], "idem.decision"))
	assert.Len(t, ended(tel, "idem.store.reserve"), 2)
	assert.Len(t, ended(tel, "idem.store.complete"), 1)
	assertNoRawKey(t, tel, rm, key)
}

// A duplicate that arrives while the first request runs is answered 409
// and counted as in progress; another payload under the key as reused.
func TestTelemetryConcurrentDuplicateIsCountedAsInProgress(t *testing.T) {
	t.Parallel()
	tel := newTelemetryRig(t)
	rig := newRig(t, tel.opts...)
	blocking := newBlockingHandler()
	h := tel.underServerSpan(rig.idem.Wrap(paymentsRoute, blocking))

	const key = "otel-concurrent-key-51c2"
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		serve(h, post(key, `{"amount":5}`))
	}()
	select {
	case <-blocking.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the first request never reached the handler")
	}
	dup := serve(h, post(key, `{"amount":5}`))
	assert.Equal(t, http.StatusConflict, dup.Code)
	reused := serve(h, post(key, `{"amount":6}`))
	assert.Equal(t, http.StatusUnprocessableEntity, reused.Code)
	close(blocking.release)
	wg.Wait()

	rm := tel.metrics(t)
	assert.Equal(t, int64(1), count(t, rm, "idem.server.requests", decision("in_progress")))
	assert.Equal(t, int64(1), count(t, rm, "idem.server.requests", decision("key_reused")))
	assert.Equal(t, int64(1), count(t, rm, "idem.server.requests", decision("executed")))
	assertNoRawKey(t, tel, rm, key)
}

// A store that cannot be reached is a store error and a 503 decision.
func TestTelemetryStoreUnavailable(t *testing.T) {
	t.Parallel()
	tel := newTelemetryRig(t)
	store := server.NewMemoryStore()
	t.Cleanup(func() { _ = store.Close() })
	idem := mustNew(t, brokenStore{store}, tel.opts...)
	rec := serve(idem.Wrap(paymentsRoute, &countingHandler{}), post("otel-broken-key", `{}`))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)

	rm := tel.metrics(t)
	assert.Equal(t, int64(1), count(t, rm, "idem.server.requests", decision("store_unavailable")))
	assert.Equal(t, int64(1), count(t, rm, "idem.server.store.errors",
		attribute.String("idem.store.operation", "reserve"), attribute.String("error.type", "store_error")))
}

// Requests refused before any reservation (no key) are counted too.
func TestTelemetryRefusedBeforeReservation(t *testing.T) {
	t.Parallel()
	tel := newTelemetryRig(t)
	rig := newRig(t, tel.opts...)
	c := post("", `{}`)
	c.keys = nil
	rec := serve(rig.idem.Wrap(paymentsRoute, &countingHandler{}), c)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Equal(t, int64(1), count(t, tel.metrics(t), "idem.server.requests", decision("refused")))
}

// Once counts what each call came to: executed, replayed, in progress,
// reused, failed, and fenced when the lease was lost to a newer consumer.
func TestTelemetryOnceDecisions(t *testing.T) {
	t.Parallel()
	tel := newTelemetryRig(t)
	clock := newManualClock()
	store := server.NewMemoryStore(server.WithClock(clock.Now))
	t.Cleanup(func() { _ = store.Close() })
	ctx := t.Context()
	ok := func(context.Context) ([]byte, error) { return []byte("done"), nil }
	opts := append([]server.Option{server.WithLease(time.Minute)}, tel.opts...)

	_, err := server.Once(ctx, store, onceScope, "otel-once-1", "fp", func(ctx context.Context) ([]byte, error) {
		_, err := server.Once(ctx, store, onceScope, "otel-once-1", "fp", ok, opts...)
		assert.ErrorIs(t, err, server.ErrInProgress)
		return []byte("first"), nil
	}, opts...)
	require.NoError(t, err)
	got, err := server.Once(ctx, store, onceScope, "otel-once-1", "fp", ok, opts...)
	require.NoError(t, err)
	assert.Equal(t, "first", string(got))
	_, err = server.Once(ctx, store, onceScope, "otel-once-1", "other-fp", ok, opts...)
	require.ErrorIs(t, err, server.ErrKeyReused)
	boom := errors.New("boom")
	_, err = server.Once(ctx, store, onceScope, "otel-once-2", "fp", func(context.Context) ([]byte, error) { return nil, boom }, opts...)
	require.ErrorIs(t, err, boom)

	// The lease runs out while fn runs; a redelivery takes the id over and
	// completes it; the first consumer's result is fenced.
	_, err = server.Once(ctx, store, onceScope, "otel-once-3", "fp", func(context.Context) ([]byte, error) {
		clock.Advance(2 * time.Minute)
		_, err := server.Once(ctx, store, onceScope, "otel-once-3", "fp", ok, opts...)
		require.NoError(t, err)
		return []byte("late"), nil
	}, opts...)
	require.ErrorIs(t, err, server.ErrFenced)

	rm := tel.metrics(t)
	assert.Equal(t, int64(2), count(t, rm, "idem.server.once.calls", decision("executed")))
	assert.Equal(t, int64(1), count(t, rm, "idem.server.once.calls", decision("replayed")))
	assert.Equal(t, int64(1), count(t, rm, "idem.server.once.calls", decision("in_progress")))
	assert.Equal(t, int64(1), count(t, rm, "idem.server.once.calls", decision("key_reused")))
	assert.Equal(t, int64(1), count(t, rm, "idem.server.once.calls", decision("failed"), attribute.String("idem.settlement", "released")))
	assert.Equal(t, int64(1), count(t, rm, "idem.server.once.calls", decision("fenced")))
	assert.Equal(t, int64(1), count(t, rm, "idem.server.store.errors",
		attribute.String("idem.store.operation", "complete"), attribute.String("error.type", "fenced")))
	onces := ended(tel, "idem.once")
	require.Len(t, onces, 7)
	for _, s := range onces {
		assert.True(t, strings.HasPrefix(spanValue(s, "idem.key.hash"), server.KeyHash("otel-once-1")) ||
			strings.HasPrefix(spanValue(s, "idem.key.hash"), server.KeyHash("otel-once-2")) ||
			strings.HasPrefix(spanValue(s, "idem.key.hash"), server.KeyHash("otel-once-3")),
			"the key hash extends the logs' key_hash")
	}
	assertNoRawKey(t, tel, rm, "otel-once-")
}

// A real Postgres store that stops answering (a proxy that stalls) makes
// a Once call a store timeout: counted as store_unavailable, and as a
// reserve error of type timeout.
func TestTelemetryOnceStalledPostgresIsAStoreTimeout(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	proxy := testenv.StartPauseProxy(t, u.Host)
	u.Host = proxy.Addr()
	store, err := pgstore.Open(t.Context(), u.String(), pgstore.WithSchema(testenv.PostgresSchema(t, dsn, "idemotel_")))
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	t.Cleanup(proxy.Resume) // first: a store call the test left stalled ends, so Close does not wait on it
	tel := newTelemetryRig(t)
	opts := append([]server.Option{server.WithStoreTimeout(testStoreTimeout)}, tel.opts...)
	ok := func(context.Context) ([]byte, error) { return []byte("done"), nil }
	// Only stops a hang when the store timeout is missing.
	ctx, cancel := context.WithTimeout(t.Context(), hangGuard)
	defer cancel()

	_, err = server.Once(ctx, store, onceScope, "otel-pg-before", "fp", ok, opts...)
	require.NoError(t, err)
	proxy.Pause()
	_, err = server.Once(ctx, store, onceScope, "otel-pg-stalled", "fp", ok, opts...)
	require.ErrorIs(t, err, server.ErrStoreTimeout)
	proxy.Resume()

	rm := tel.metrics(t)
	assert.Equal(t, int64(1), count(t, rm, "idem.server.once.calls", decision("executed")))
	assert.Equal(t, int64(1), count(t, rm, "idem.server.once.calls", decision("store_unavailable")))
	assert.Equal(t, int64(1), count(t, rm, "idem.server.store.errors",
		attribute.String("idem.store.operation", "reserve"), attribute.String("error.type", "timeout")))
	assert.Equal(t, uint64(2), recordings(t, rm, "idem.server.store.duration", attribute.String("idem.store.operation", "reserve")))
}

// A request whose lease runs out while its handler runs, and whose key a
// retry takes over, finds its answer fenced: counted as executed with the
// settlement fenced, the span in error.
func TestTelemetryLeaseLostIsCountedAsFenced(t *testing.T) {
	t.Parallel()
	tel := newTelemetryRig(t)
	rig := newRig(t, append([]server.Option{server.WithLease(time.Minute)}, tel.opts...)...)
	const key = "otel-fenced-key-0c41"
	var h http.Handler
	first := true
	h = rig.idem.Wrap(paymentsRoute, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if first {
			first = false
			rig.clock.Advance(2 * time.Minute)
			retry := serve(h, post(key, `{"amount":3}`))
			require.Equal(t, http.StatusCreated, retry.Code, "the retry takes the key over")
		}
		w.WriteHeader(http.StatusCreated)
	}))
	serve(h, post(key, `{"amount":3}`))

	rm := tel.metrics(t)
	assert.Equal(t, int64(1), count(t, rm, "idem.server.requests", decision("executed"), attribute.String("idem.settlement", "fenced")))
	assert.Equal(t, int64(1), count(t, rm, "idem.server.requests", decision("executed"), attribute.String("idem.settlement", "stored")))
	assert.Equal(t, int64(1), count(t, rm, "idem.server.store.errors",
		attribute.String("idem.store.operation", "complete"), attribute.String("error.type", "fenced")))
	spans := ended(tel, "idem.server")
	require.Len(t, spans, 2)
	assert.Equal(t, "fenced", spanValue(spans[1], "idem.settlement"), "the outer request ends last")
	assert.Equal(t, codes.Error, spans[1].Status().Code)
	assert.Equal(t, codes.Unset, spans[0].Status().Code)
}
