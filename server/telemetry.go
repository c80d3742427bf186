package server

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/trace"
)

// instrumentationName names the tracer and meter of the server layer.
const instrumentationName = "github.com/idemkit/idem/server"

// Attribute keys of the server layer's spans and metrics
// (docs/OBSERVABILITY.md). Keys are recorded only as hashes.
const (
	attrKeyHash    = attribute.Key("idem.key.hash")
	attrDecision   = attribute.Key("idem.decision")
	attrSettlement = attribute.Key("idem.settlement")
	attrMismatch   = attribute.Key("idem.fingerprint.mismatch")
	attrStoreOp    = attribute.Key("idem.store.operation")
)

// Decisions of the layer on a guarded request, or of Once on a call
// (idem.decision).
const (
	decisionExecuted         = "executed"
	decisionReplayed         = "replayed"
	decisionInProgress       = "in_progress"
	decisionKeyReused        = "key_reused"
	decisionStoreUnavailable = "store_unavailable"
	decisionRefused          = "refused"
	decisionUnkeyed          = "unkeyed"
	decisionFailed           = "failed"
	decisionFenced           = "fenced"
	decisionError            = "error"
)

// WithTracerProvider makes the layer (New) and Once record a span per
// guarded request ("idem.server", a child of the request's span, such as
// otelhttp's server span) or call ("idem.once") with the decision taken,
// and a child span per store operation. Keys appear only as hashes
// (TelemetryKeyHash). A nil tp is ignored.
func WithTracerProvider(tp trace.TracerProvider) Option {
	if tp == nil {
		return func(*config) {}
	}
	tracer := tp.Tracer(instrumentationName, trace.WithSchemaURL(semconv.SchemaURL))
	return func(c *config) { c.tel.tracer = tracer }
}

// WithMeterProvider makes the layer (New) and Once record the
// idem.server.* metrics (docs/OBSERVABILITY.md) with mp. The instruments
// are made once per Option, so one Option value serves every Once call. A
// nil mp is ignored.
func WithMeterProvider(mp metric.MeterProvider) Option {
	if mp == nil {
		return func(*config) {}
	}
	var once sync.Once
	var m *serverMetrics
	return func(c *config) {
		once.Do(func() { m = newServerMetrics(mp) })
		c.tel.metrics = m
	}
}

// TelemetryKeyHash is how spans and metrics name an idempotency key: the
// first 16 hex digits of its keyed hash, whose first 8 are KeyHash.
func TelemetryKeyHash(key string) string {
	return hex.EncodeToString(keyedKeySum(key)[:8])
}

// serverTelemetry is the tracer and instruments of a layer; both nil
// without the options, and every hook is then a nil check.
type serverTelemetry struct {
	tracer  trace.Tracer
	metrics *serverMetrics
}

func (t serverTelemetry) enabled() bool { return t.tracer != nil || t.metrics != nil }

// serverMetrics are the idem.server.* instruments.
type serverMetrics struct {
	requests      metric.Int64Counter
	once          metric.Int64Counter
	storeDuration metric.Float64Histogram
	storeErrors   metric.Int64Counter
}

// storeDurationBuckets are the bucket boundaries, in seconds, of
// idem.server.store.duration: store operations take milliseconds.
var storeDurationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// newServerMetrics makes the instruments on mp's meter; one the provider
// refuses is reported to otel.Handle and replaced by a no-op.
func newServerMetrics(mp metric.MeterProvider) *serverMetrics {
	m := mp.Meter(instrumentationName, metric.WithSchemaURL(semconv.SchemaURL))
	var errs []error
	var nm noop.Meter
	int64Counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil || c == nil {
			errs = append(errs, err)
			c, _ = nm.Int64Counter(name)
		}
		return c
	}
	out := &serverMetrics{
		requests: int64Counter("idem.server.requests", "{request}",
			"Guarded requests, by the idempotency layer's decision."),
		once: int64Counter("idem.server.once.calls", "{call}",
			"Once calls, by decision."),
		storeErrors: int64Counter("idem.server.store.errors", "{error}",
			"Store operations that failed, by operation and error type."),
	}
	h, err := m.Float64Histogram("idem.server.store.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of the idempotency store's operations."),
		metric.WithExplicitBucketBoundaries(storeDurationBuckets...))
	if err != nil || h == nil {
		errs = append(errs, err)
		h, _ = nm.Float64Histogram("idem.server.store.duration")
	}
	out.storeDuration = h
	if err := errors.Join(errs...); err != nil {
		otel.Handle(err)
	}
	return out
}

// observation is what one guarded request (or Once call) learns for its
// span and metrics; it travels in the request's context so the store's
// operations can report to it.
type observation struct {
	span       trace.Span // nil without tracing
	route      string
	decision   string
	settlement string
	keyHash    string
	mismatch   bool
	reserveErr bool
	ran        bool
}

type observationKey struct{}

func observationFrom(ctx context.Context) *observation {
	obs, _ := ctx.Value(observationKey{}).(*observation)
	return obs
}

// serve runs the protocol on r under an idem.server span and counts its
// decision.
func (t serverTelemetry) serve(m *Middleware, w http.ResponseWriter, r *http.Request, route string, next http.Handler) {
	obs := &observation{route: route}
	ctx := r.Context()
	if t.tracer != nil {
		ctx, obs.span = t.tracer.Start(ctx, "idem.server",
			trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(semconv.HTTPRouteKey.String(route)))
	}
	m.serveProtocol(w, r.WithContext(context.WithValue(ctx, observationKey{}, obs)), route, next)
	if obs.decision == "" {
		obs.decision = decisionRefused
	}
	if obs.decision == decisionExecuted && obs.settlement == "" {
		// The handler completed the key itself (Held.MarkCompleted), or
		// aborted the response.
		obs.settlement = "by_handler"
	}
	if t.metrics != nil {
		attrs := []attribute.KeyValue{attrDecision.String(obs.decision), semconv.HTTPRouteKey.String(route)}
		if obs.settlement != "" {
			attrs = append(attrs, attrSettlement.String(obs.settlement))
		}
		t.metrics.requests.Add(ctx, 1, metric.WithAttributes(attrs...))
	}
	obs.end()
}

// end ends the observation's span with its decision.
func (obs *observation) end() {
	if obs.span == nil {
		return
	}
	attrs := []attribute.KeyValue{attrDecision.String(obs.decision)}
	if obs.keyHash != "" {
		attrs = append(attrs, attrKeyHash.String(obs.keyHash))
	}
	if obs.settlement != "" {
		attrs = append(attrs, attrSettlement.String(obs.settlement))
	}
	if obs.mismatch {
		attrs = append(attrs, attrMismatch.Bool(true))
	}
	switch {
	case obs.decision == decisionStoreUnavailable, obs.decision == decisionError, obs.decision == decisionFenced:
		obs.span.SetStatus(codes.Error, obs.decision)
	case obs.settlement == "fenced", obs.settlement == "store_error":
		obs.span.SetStatus(codes.Error, obs.settlement)
	}
	obs.span.SetAttributes(attrs...)
	obs.span.End()
}

// decided records the layer's decision on r, whose key is key; a no-op
// without telemetry.
func (m *Middleware) decided(r *http.Request, decision, key string) {
	if !m.cfg.tel.enabled() {
		return
	}
	obs := observationFrom(r.Context())
	if obs == nil {
		return
	}
	obs.decision = decision
	if key != "" && obs.span != nil {
		obs.keyHash = TelemetryKeyHash(key)
	}
}

// decidedReplay records a replay of a completed key; mismatch says it was
// sent with another payload (WithReplayOnMismatch).
func (m *Middleware) decidedReplay(r *http.Request, key string, mismatch bool) {
	m.decided(r, decisionReplayed, key)
	if mismatch && m.cfg.tel.enabled() {
		if obs := observationFrom(r.Context()); obs != nil {
			obs.mismatch = true
		}
	}
}
