package idem

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
)

// durationBuckets are the bucket boundaries, in seconds, OpenTelemetry's
// HTTP conventions advise for http.client.request.duration; idem's own
// duration histograms use them too.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// pendingAgeBuckets are the bucket boundaries, in seconds, of
// idem.client.pending.age: from a second to the default retention.
var pendingAgeBuckets = []float64{1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 24 * 3600}

// clientMetrics are the instruments of a Client (docs/OBSERVABILITY.md).
type clientMetrics struct {
	attempts        metric.Int64Counter
	requestDuration metric.Float64Histogram
	retries         metric.Int64Counter
	giveUps         metric.Int64Counter
	replays         metric.Int64Counter
	conflicts       metric.Int64Counter
	pending         metric.Int64Counter
	pendingAge      metric.Float64Histogram
	reconciliations metric.Int64Counter
	doDuration      metric.Float64Histogram
	registration    metric.Registration
}

// newClientMetrics makes the instruments on mp's meter. An instrument the
// provider refuses is reported to otel.Handle and replaced by a no-op, as
// OpenTelemetry's own instrumentations do: telemetry never fails New.
func newClientMetrics(mp metric.MeterProvider, budget RetryBudget) *clientMetrics {
	m := mp.Meter(instrumentationName, metric.WithSchemaURL(semconv.SchemaURL))
	var errs []error
	handle := func(e error) {
		if e != nil {
			errs = append(errs, e)
		}
	}
	var err error
	out := &clientMetrics{}
	out.attempts, err = m.Int64Counter("idem.client.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("HTTP attempts made by the client, by outcome."))
	handle(err)
	out.requestDuration, err = m.Float64Histogram("http.client.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP client requests (one per attempt)."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	handle(err)
	out.retries, err = m.Int64Counter("idem.client.retries", metric.WithUnit("{retry}"),
		metric.WithDescription("Attempts the client decided to retry, by reason."))
	handle(err)
	out.giveUps, err = m.Int64Counter("idem.client.give_ups", metric.WithUnit("{call}"),
		metric.WithDescription("Do calls that returned an error, by reason."))
	handle(err)
	out.replays, err = m.Int64Counter("idem.client.replays", metric.WithUnit("{response}"),
		metric.WithDescription("Do calls answered by a replay: local (from the keystore) or server (Idempotent-Replayed)."))
	handle(err)
	out.conflicts, err = m.Int64Counter("idem.client.key_conflicts", metric.WithUnit("{response}"),
		metric.WithDescription("Answers saying the key is in progress (409) or reused for another payload (422)."))
	handle(err)
	out.pending, err = m.Int64Counter("idem.client.pending", metric.WithUnit("{call}"),
		metric.WithDescription("Do calls that left their intent unsettled (pending or accepted)."))
	handle(err)
	out.pendingAge, err = m.Float64Histogram("idem.client.pending.age", metric.WithUnit("s"),
		metric.WithDescription("Age of an intent when a Do leaves it unsettled, or settles it after an earlier Do had left it unsettled."),
		metric.WithExplicitBucketBoundaries(pendingAgeBuckets...))
	handle(err)
	out.reconciliations, err = m.Int64Counter("idem.client.reconciliations", metric.WithUnit("{reconciliation}"),
		metric.WithDescription("Reconciler runs, by result."))
	handle(err)
	out.doDuration, err = m.Float64Histogram("idem.client.do.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of Do calls, every attempt and wait included, by outcome."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	handle(err)
	if ab, ok := budget.(*AdaptiveBudget); ok && ab != nil {
		handle(out.observeAdaptiveBudget(m, ab))
	} else if b, ok := budget.(*Budget); ok && b != nil {
		handle(out.observeBudget(m, b))
	}
	if len(errs) > 0 {
		otel.Handle(errors.Join(errs...))
		out.fillNoops()
	}
	return out
}

// fillNoops replaces the instruments a provider failed to make by no-ops,
// so recording never meets a nil instrument.
func (cm *clientMetrics) fillNoops() {
	var m noop.Meter
	if cm.attempts == nil {
		cm.attempts, _ = m.Int64Counter("")
	}
	if cm.requestDuration == nil {
		cm.requestDuration, _ = m.Float64Histogram("")
	}
	if cm.retries == nil {
		cm.retries, _ = m.Int64Counter("")
	}
	if cm.giveUps == nil {
		cm.giveUps, _ = m.Int64Counter("")
	}
	if cm.replays == nil {
		cm.replays, _ = m.Int64Counter("")
	}
	if cm.conflicts == nil {
		cm.conflicts, _ = m.Int64Counter("")
	}
	if cm.pending == nil {
		cm.pending, _ = m.Int64Counter("")
	}
	if cm.pendingAge == nil {
		cm.pendingAge, _ = m.Float64Histogram("")
	}
	if cm.reconciliations == nil {
		cm.reconciliations, _ = m.Int64Counter("")
	}
	if cm.doDuration == nil {
		cm.doDuration, _ = m.Float64Histogram("")
	}
}

// observeAdaptiveBudget registers the gauges of an AdaptiveBudget's state.
func (cm *clientMetrics) observeAdaptiveBudget(m metric.Meter, b *AdaptiveBudget) error {
	tokens, err := m.Float64ObservableGauge("idem.client.retry_budget.tokens", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens in the retry budget; below zero, owed by retries deferred through AllowRetry."))
	if err != nil {
		return err
	}
	down, err := m.Int64ObservableGauge("idem.client.retry_budget.down",
		metric.WithDescription("1 when the budget's window saw attempts and none accepted (retries refused, not deferred)."))
	if err != nil {
		return err
	}
	waiting, err := m.Int64ObservableGauge("idem.client.retry_budget.waiting", metric.WithUnit("{retry}"),
		metric.WithDescription("Retries waiting for a token of the retry budget."))
	if err != nil {
		return err
	}
	cm.registration, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := b.State(time.Now())
		o.ObserveFloat64(tokens, st.Tokens)
		isDown := int64(0)
		if st.Down {
			isDown = 1
		}
		o.ObserveInt64(down, isDown)
		o.ObserveInt64(waiting, int64(st.Waiting))
		return nil
	}, tokens, down, waiting)
	return err
}

// observeBudget registers the gauge of a fixed Budget's tokens.
func (cm *clientMetrics) observeBudget(m metric.Meter, b *Budget) error {
	tokens, err := m.Float64ObservableGauge("idem.client.retry_budget.tokens", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens in the retry budget."))
	if err != nil {
		return err
	}
	cm.registration, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveFloat64(tokens, b.Tokens())
		return nil
	}, tokens)
	return err
}

func (cm *clientMetrics) close() {
	if cm.registration != nil {
		_ = cm.registration.Unregister()
	}
}

// recordAttempt records one attempt: idem.client.attempts and
// http.client.request.duration.
func (cm *clientMetrics) recordAttempt(ctx context.Context, d time.Duration, method string, status int, errType, outcome string, server []attribute.KeyValue) {
	if cm.attempts.Enabled(ctx) {
		cm.attempts.Add(ctx, 1, metric.WithAttributes(semconv.HTTPRequestMethodKey.String(method), attrAttemptOutcome.String(outcome)))
	}
	if !cm.requestDuration.Enabled(ctx) {
		return // a no-op provider: no attributes to build
	}
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, semconv.HTTPRequestMethodKey.String(method))
	attrs = append(attrs, server...)
	if status != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCodeKey.Int(status))
	}
	if errType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
	}
	cm.requestDuration.Record(ctx, d.Seconds(), metric.WithAttributes(attrs...))
}

// recordDo records what a Do came to: its duration, a replay, a give-up.
func (cm *clientMetrics) recordDo(ctx context.Context, d time.Duration, outcome, replay, reason string) {
	if cm.doDuration.Enabled(ctx) {
		cm.doDuration.Record(ctx, d.Seconds(), metric.WithAttributes(attrOutcome.String(outcome)))
	}
	if replay != "" {
		cm.replays.Add(ctx, 1, metric.WithAttributes(attrReplay.String(replay)))
	}
	if reason != "" {
		cm.giveUps.Add(ctx, 1, metric.WithAttributes(attrGiveUpReason.String(reason)))
	}
}
