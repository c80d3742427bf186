package idem

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/idem/idemtest"
)

// recorded is a Client's telemetry read back through the SDK's in-memory
// span recorder and manual metric reader.
type recorded struct {
	spans  *tracetest.SpanRecorder
	reader *sdkmetric.ManualReader
}

// withRecordedTelemetry returns the options that send a Client's spans and
// metrics to rec.
func withRecordedTelemetry(t *testing.T) (*recorded, []Option) {
	t.Helper()
	rec := &recorded{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(rec.reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	return rec, []Option{WithTracerProvider(tp), WithMeterProvider(mp)}
}

func (r *recorded) metrics(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.reader.Collect(context.Background(), &rm))
	return rm
}

// findMetric returns the metric called name, or fails the test.
func findMetric(t *testing.T, rm metricdata.ResourceMetrics, name string) metricdata.Metrics {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m
			}
		}
	}
	t.Fatalf("no metric %q", name)
	return metricdata.Metrics{}
}

// hasMetric reports whether a metric called name was recorded.
func hasMetric(rm metricdata.ResourceMetrics, name string) bool {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return true
			}
		}
	}
	return false
}

// counter sums the points of the int64 counter name whose attributes
// include every one of want.
func counter(t *testing.T, rm metricdata.ResourceMetrics, name string, want ...attribute.KeyValue) int64 {
	t.Helper()
	sum, ok := findMetric(t, rm, name).Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is an int64 sum", name)
	var total int64
	for _, dp := range sum.DataPoints {
		if hasAll(dp.Attributes, want) {
			total += dp.Value
		}
	}
	return total
}

// histogramCount counts the recordings of the float64 histogram name whose
// attributes include every one of want.
func histogramCount(t *testing.T, rm metricdata.ResourceMetrics, name string, want ...attribute.KeyValue) uint64 {
	t.Helper()
	h, ok := findMetric(t, rm, name).Data.(metricdata.Histogram[float64])
	require.True(t, ok, "%s is a float64 histogram", name)
	var total uint64
	for _, dp := range h.DataPoints {
		if hasAll(dp.Attributes, want) {
			total += dp.Count
		}
	}
	return total
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// everyAttributeValue lists every attribute value of the spans (events
// included) and metric points, for the check that no secret is among them.
func everyAttributeValue(spans []sdktrace.ReadOnlySpan, rm metricdata.ResourceMetrics) []string {
	var out []string
	add := func(kvs []attribute.KeyValue) {
		for _, kv := range kvs {
			out = append(out, kv.Value.Emit())
		}
	}
	for _, s := range spans {
		out = append(out, s.Name())
		add(s.Attributes())
		for _, e := range s.Events() {
			add(e.Attributes)
		}
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					add(dp.Attributes.ToSlice())
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					add(dp.Attributes.ToSlice())
				}
			case metricdata.Gauge[float64]:
				for _, dp := range d.DataPoints {
					add(dp.Attributes.ToSlice())
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					add(dp.Attributes.ToSlice())
				}
			}
		}
	}
	return out
}

func spanAttr(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func spansNamed(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// A Do whose first answer is lost and whose second attempt gets the
// server's replay is one idem.Do span with two POST attempt spans under
// it, and counts two attempts, one retry, one server replay; no raw key,
// intent name, credential or secret query parameter shows anywhere.
func TestTelemetryLostAnswerThenServerReplay(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	rec, opts := withRecordedTelemetry(t)
	c := newTestClient(t, opts...)

	srv.LoseNextResponses(1)
	req := paymentRequest(t, srv.URL, 4200, "otel-lost")
	q := req.URL.Query()
	q.Set("api_key", "sekret-query-value")
	req.URL.RawQuery = q.Encode()
	const name = "order-otel-lost"
	in := begin(t, c, name, req)
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	require.True(t, IsReplay(resp))

	spans := rec.spans.Ended()
	dos := spansNamed(spans, "idem.Do")
	attempts := spansNamed(spans, http.MethodPost)
	require.Len(t, dos, 1)
	require.Len(t, attempts, 2)
	do := dos[0]
	assert.Equal(t, trace.SpanKindInternal, do.SpanKind())
	for i, a := range attempts {
		assert.Equal(t, trace.SpanKindClient, a.SpanKind())
		assert.Equal(t, do.SpanContext().SpanID(), a.Parent().SpanID(), "attempt %d is a child of the Do", i+1)
		assert.Equal(t, do.SpanContext().TraceID(), a.SpanContext().TraceID())
		v, _ := spanAttr(a, attrAttempt)
		assert.Equal(t, int64(i+1), v.AsInt64())
		v, _ = spanAttr(a, "url.full")
		assert.Contains(t, v.AsString(), "api_key=REDACTED")
		v, _ = spanAttr(a, "server.address")
		assert.Equal(t, "127.0.0.1", v.AsString())
		v, ok := spanAttr(a, "server.port")
		assert.True(t, ok && v.AsInt64() > 0)
		v, _ = spanAttr(a, "http.request.method")
		assert.Equal(t, "POST", v.AsString())
	}
	first, second := attempts[0], attempts[1]
	v, _ := spanAttr(first, attrRetryReason)
	assert.Equal(t, "connection_lost", v.AsString())
	v, _ = spanAttr(first, "error.type")
	assert.Equal(t, "connection_lost", v.AsString())
	_, ok := spanAttr(first, "http.request.resend_count")
	assert.False(t, ok, "a first attempt is no resend")
	v, _ = spanAttr(second, "http.request.resend_count")
	assert.Equal(t, int64(1), v.AsInt64())
	v, _ = spanAttr(second, "http.response.status_code")
	assert.Equal(t, int64(http.StatusCreated), v.AsInt64())
	v, _ = spanAttr(second, attrReplay)
	assert.Equal(t, "server", v.AsString())

	v, _ = spanAttr(do, attrKeyHash)
	assert.Equal(t, HashForTelemetry(in.Key), v.AsString())
	v, _ = spanAttr(do, attrNameHash)
	assert.Equal(t, HashForTelemetry(name), v.AsString())
	v, _ = spanAttr(do, attrOutcome)
	assert.Equal(t, "succeeded", v.AsString())
	v, _ = spanAttr(do, attrReplay)
	assert.Equal(t, "server", v.AsString())
	v, _ = spanAttr(do, attrIntentAttempts)
	assert.Equal(t, int64(2), v.AsInt64())

	// A second Do replays locally: no attempt, one local replay.
	again, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	require.True(t, IsLocalReplay(again))
	require.Len(t, spansNamed(rec.spans.Ended(), "idem.Do"), 2)
	require.Len(t, spansNamed(rec.spans.Ended(), http.MethodPost), 2)

	rm := rec.metrics(t)
	assert.Equal(t, int64(2), counter(t, rm, "idem.client.attempts"))
	assert.Equal(t, int64(1), counter(t, rm, "idem.client.attempts", attrAttemptOutcome.String("success")))
	assert.Equal(t, int64(1), counter(t, rm, "idem.client.retries", attrRetryReason.String("connection_lost")))
	assert.Equal(t, int64(1), counter(t, rm, "idem.client.retries"))
	assert.Equal(t, int64(1), counter(t, rm, "idem.client.replays", attrReplay.String("server")))
	assert.Equal(t, int64(1), counter(t, rm, "idem.client.replays", attrReplay.String("local")))
	assert.Equal(t, uint64(2), histogramCount(t, rm, "http.client.request.duration"))
	assert.Equal(t, uint64(1), histogramCount(t, rm, "http.client.request.duration", attribute.Int("http.response.status_code", 201)))
	assert.Equal(t, uint64(2), histogramCount(t, rm, "idem.client.do.duration", attrOutcome.String("succeeded")))
	assert.False(t, hasMetric(rm, "idem.client.give_ups"), "nothing gave up")
	assert.False(t, hasMetric(rm, "idem.client.pending"), "nothing was left pending")

	for _, value := range everyAttributeValue(rec.spans.Ended(), rm) {
		assert.NotContains(t, value, in.Key, "no raw key in telemetry")
		assert.NotContains(t, value, name, "no raw intent name in telemetry")
		assert.NotContains(t, value, testToken, "no credential in telemetry")
		assert.NotContains(t, value, "sekret-query-value", "no secret query parameter in telemetry")
	}
}

// A retry the budget refuses is a give-up with its reason, on the
// metrics and on both spans, and leaves the intent pending.
func TestTelemetryBudgetExhaustedGiveUp(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	rec, opts := withRecordedTelemetry(t)
	c := newTestClient(t, append(opts, WithBudget(NewBudget(0, 1, 0)))...)

	srv.FailNext(1, http.StatusServiceUnavailable, 0)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 100, "otel-budget"))
	_, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrBudgetExhausted)
	require.Equal(t, Pending, in.State)

	rm := rec.metrics(t)
	assert.Equal(t, int64(1), counter(t, rm, "idem.client.give_ups", attrGiveUpReason.String("budget_exhausted")))
	assert.Equal(t, int64(1), counter(t, rm, "idem.client.give_ups"))
	assert.Equal(t, int64(1), counter(t, rm, "idem.client.attempts"))
	assert.Equal(t, int64(1), counter(t, rm, "idem.client.pending", attrIntentState.String("pending")))
	assert.Equal(t, uint64(1), histogramCount(t, rm, "idem.client.pending.age", attrIntentState.String("pending")))
	assert.False(t, hasMetric(rm, "idem.client.retries"), "the refused retry is not counted as one")
	tokens, ok := findMetric(t, rm, "idem.client.retry_budget.tokens").Data.(metricdata.Gauge[float64])
	require.True(t, ok)
	require.Len(t, tokens.DataPoints, 1)
	assert.Equal(t, 0.0, tokens.DataPoints[0].Value)

	spans := rec.spans.Ended()
	dos := spansNamed(spans, "idem.Do")
	require.Len(t, dos, 1)
	v, _ := spanAttr(dos[0], attrGiveUpReason)
	assert.Equal(t, "budget_exhausted", v.AsString())
	v, _ = spanAttr(dos[0], attrOutcome)
	assert.Equal(t, "pending", v.AsString())
	attempts := spansNamed(spans, http.MethodPost)
	require.Len(t, attempts, 1)
	v, _ = spanAttr(attempts[0], attrGiveUpReason)
	assert.Equal(t, "budget_exhausted", v.AsString())
	v, _ = spanAttr(attempts[0], "error.type")
	assert.Equal(t, "503", v.AsString())

	// Resumed later, the intent settles: its age is recorded again, as
	// settled.
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	rm = rec.metrics(t)
	assert.Equal(t, uint64(1), histogramCount(t, rm, "idem.client.pending.age", attrIntentState.String("succeeded")))
}

// The default adaptive budget shows its tokens as a gauge.
func TestTelemetryAdaptiveBudgetGauge(t *testing.T) {
	t.Parallel()
	rec, opts := withRecordedTelemetry(t)
	c, err := New(opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	rm := rec.metrics(t)
	tokens, ok := findMetric(t, rm, "idem.client.retry_budget.tokens").Data.(metricdata.Gauge[float64])
	require.True(t, ok)
	require.Len(t, tokens.DataPoints, 1)
	assert.Equal(t, float64(DefaultAdaptiveCapacity), tokens.DataPoints[0].Value)
	require.True(t, hasMetric(rm, "idem.client.retry_budget.down"))

	require.NoError(t, c.Close())
	rm = rec.metrics(t)
	assert.False(t, hasMetric(rm, "idem.client.retry_budget.tokens"), "a closed Client stops reporting its budget")
}

// A retry the adaptive budget refuses after its wait was never sent: it
// is not counted as a retry, the one before it is.
func TestTelemetryRetryRefusedAfterTheWaitIsNotCounted(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	rec, opts := withRecordedTelemetry(t)
	budget := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: 1, MinPerSecond: -1, Patience: 30 * time.Millisecond, PatienceDebt: 1})
	c := newTestClient(t, append(opts, WithBudget(budget))...)
	srv.FailNext(10, http.StatusServiceUnavailable, 0)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 100, "otel-held"))
	_, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrBudgetExhausted)

	rm := rec.metrics(t)
	assert.Equal(t, int64(2), counter(t, rm, "idem.client.attempts"))
	assert.Equal(t, int64(1), counter(t, rm, "idem.client.retries"), "the retry sent, not the one refused")
	assert.Equal(t, int64(1), counter(t, rm, "idem.client.give_ups", attrGiveUpReason.String("budget_exhausted")))
}

// A retry waiting for a token of the adaptive budget shows on its gauge.
func TestTelemetryAdaptiveBudgetWaitingGauge(t *testing.T) {
	t.Parallel()
	rec, opts := withRecordedTelemetry(t)
	b := NewAdaptiveBudget(AdaptiveBudgetConfig{Capacity: -1, MinPerSecond: -1})
	c, err := New(append(opts, WithBudget(b))...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	waitingNow := func() int64 {
		g, ok := findMetric(t, rec.metrics(t), "idem.client.retry_budget.waiting").Data.(metricdata.Gauge[int64])
		require.True(t, ok)
		require.Len(t, g.DataPoints, 1)
		return g.DataPoints[0].Value
	}
	assert.Zero(t, waitingNow())
	b.Accepted(time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	done := acquireAsync(ctx, b)
	waitForWaiters(t, b, 1)
	assert.Equal(t, int64(1), waitingNow())
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	assert.Zero(t, waitingNow())
}

// An answer "in progress" (409: another client is running the same key)
// and one "key reused" (422: the key belongs to another payload) are both
// counted as key conflicts.
func TestTelemetryKeyConflicts(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	srv.SetHandlerDelay(400 * time.Millisecond)
	holder := newTestClient(t)
	rec, opts := withRecordedTelemetry(t)
	c := newTestClient(t, append(opts, WithMaxAttempts(10))...)

	const key = "otel-conflict-key-0001"
	first, err := holder.Begin(context.Background(), "", paymentRequest(t, srv.URL, 700, "otel-conflict"), WithIntentKey(key))
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = holder.Do(context.Background(), first)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for srv.Requests() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	require.NotZero(t, srv.Requests(), "the first request reached the server")

	dup, err := c.Begin(context.Background(), "", paymentRequest(t, srv.URL, 700, "otel-conflict"), WithIntentKey(key))
	require.NoError(t, err)
	resp, err := c.Do(context.Background(), dup)
	require.NoError(t, err)
	assert.True(t, IsReplay(resp), "the duplicate gets the first request's answer once it is done")
	wg.Wait()

	// The same key with another payload, from a Client that never sent it.
	srv.SetHandlerDelay(0)
	other := newTestClient(t, opts...)
	reused, err := other.Begin(context.Background(), "", paymentRequest(t, srv.URL, 1, "otel-reused"), WithIntentKey(key))
	require.NoError(t, err)
	_, err = other.Do(context.Background(), reused)
	require.ErrorIs(t, err, ErrKeyReused)

	rm := rec.metrics(t)
	assert.GreaterOrEqual(t, counter(t, rm, "idem.client.key_conflicts", attrConflict.String("in_progress")), int64(1))
	assert.GreaterOrEqual(t, counter(t, rm, "idem.client.retries", attrRetryReason.String("in_progress")), int64(1))
	assert.Equal(t, int64(1), counter(t, rm, "idem.client.key_conflicts", attrConflict.String("key_reused")))
	assert.Equal(t, int64(1), counter(t, rm, "idem.client.give_ups", attrGiveUpReason.String("key_reused")))
	assert.Equal(t, 1, srv.PaymentCount(), "the duplicate and the reused key paid nothing")
}

// With a propagator set globally, every attempt carries the trace context
// of its own span, as otelhttp's transport does.
func TestTelemetryPropagatesTraceContext(t *testing.T) {
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator()) })
	var mu sync.Mutex
	var seen []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Traceparent"))
		n := len(seen)
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(ts.Close)
	rec, opts := withRecordedTelemetry(t)
	c := newTestClient(t, opts...)
	in := begin(t, c, "", paymentRequest(t, ts.URL, 1, "otel-propagation"))
	_, err := c.Do(context.Background(), in)
	require.NoError(t, err)

	attempts := spansNamed(rec.spans.Ended(), http.MethodPost)
	require.Len(t, attempts, 2)
	require.Len(t, seen, 2)
	for i, a := range attempts {
		assert.True(t, strings.Contains(seen[i], a.SpanContext().SpanID().String()),
			"attempt %d carries its own span id (%s in %q)", i+1, a.SpanContext().SpanID(), seen[i])
	}
	rm := rec.metrics(t)
	assert.Equal(t, int64(1), counter(t, rm, "idem.client.retries", attrRetryReason.String("rate_limited")))
}

// Reconciler runs are counted by result, errors included.
func TestTelemetryReconciliations(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	rec, opts := withRecordedTelemetry(t)
	verdict := Reconciliation{Outcome: OutcomeSucceeded, Evidence: "found pay_1 by reference"}
	var fail bool
	c := newTestClient(t, append(opts, WithReconciler(func(context.Context, *Intent) (Reconciliation, error) {
		if fail {
			return Reconciliation{}, assert.AnError
		}
		return verdict, nil
	}))...)

	fail = true
	in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "otel-reconcile"))
	_, err := c.Reconcile(context.Background(), in)
	require.ErrorIs(t, err, assert.AnError)
	fail = false
	_, err = c.Reconcile(context.Background(), in)
	require.NoError(t, err)

	rm := rec.metrics(t)
	assert.Equal(t, int64(1), counter(t, rm, "idem.client.reconciliations", attrReconcileResult.String("error")))
	assert.Equal(t, int64(1), counter(t, rm, "idem.client.reconciliations", attrReconcileResult.String("succeeded")))
}

// Without providers every hook is a nil check: none allocates.
func TestTelemetryHooksWithoutProvidersDoNotAllocate(t *testing.T) {
	c := newTestClient(t)
	require.Nil(t, c.tel)
	ctx := context.Background()
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1/", nil)
	require.NoError(t, err)
	p := &attemptPolicy{c: c, cl: &call{req: req}}
	allocs := testing.AllocsPerRun(100, func() {
		c.tel.sawRecord(ctx, nil)
		c.tel.startAttempt(ctx, p, req)
		c.tel.reconciled(ctx, OutcomeUnknown, nil)
		c.tel.close()
	})
	assert.Zero(t, allocs)
}

// Concurrent Do calls on one Intent, observed, send once and race on
// nothing (run with -race).
func TestTelemetryConcurrentDoOnOneIntent(t *testing.T) {
	t.Parallel()
	srv := idemtest.NewServer(t)
	rec, opts := withRecordedTelemetry(t)
	c := newTestClient(t, opts...)
	in := begin(t, c, "otel-concurrent", paymentRequest(t, srv.URL, 10, "otel-concurrent"))
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.Do(context.Background(), in)
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, srv.PaymentCount())
	assert.Len(t, spansNamed(rec.spans.Ended(), "idem.Do"), 4)
	assert.Len(t, spansNamed(rec.spans.Ended(), http.MethodPost), 1)
	assert.Equal(t, int64(3), counter(t, rec.metrics(t), "idem.client.replays", attrReplay.String("local")))
}

// The library packages depend on OpenTelemetry's API alone: the SDK and
// exporters are for tests, examples and the application.
func TestLibraryPackagesDoNotImportTheOpenTelemetrySDK(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to list the packages' dependencies")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".", "./server", "./keystore", "./dialect").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, dep := range strings.Fields(string(out)) {
		assert.False(t, strings.HasPrefix(dep, "go.opentelemetry.io/otel/sdk") || strings.HasPrefix(dep, "go.opentelemetry.io/otel/exporters"),
			"a library package depends on %s", dep)
	}
	assert.Contains(t, strings.Fields(string(out)), "go.opentelemetry.io/otel/trace", "the client does use the API")
}
