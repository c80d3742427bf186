package idem

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/idem/keystore"
)

// instrumentationName names the tracer and meter of the client (the
// package's import path, as OpenTelemetry asks).
const instrumentationName = "github.com/idemkit/idem"

// Attribute keys of idem's own spans and metrics (docs/OBSERVABILITY.md
// lists them with their values). Keys and names are never recorded: only
// their hashes (HashForTelemetry).
const (
	attrKeyHash         = attribute.Key("idem.key.hash")
	attrNameHash        = attribute.Key("idem.intent.name.hash")
	attrIntentState     = attribute.Key("idem.intent.state")
	attrStateBefore     = attribute.Key("idem.intent.state.before")
	attrIntentAttempts  = attribute.Key("idem.intent.attempts")
	attrOutcome         = attribute.Key("idem.outcome")
	attrOutcomeUnknown  = attribute.Key("idem.outcome_unknown")
	attrAttempt         = attribute.Key("idem.attempt")
	attrAttemptOutcome  = attribute.Key("idem.attempt.outcome")
	attrRetryReason     = attribute.Key("idem.retry.reason")
	attrGiveUpReason    = attribute.Key("idem.give_up.reason")
	attrReplay          = attribute.Key("idem.replay")
	attrConflict        = attribute.Key("idem.conflict")
	attrReconcileResult = attribute.Key("idem.reconciliation.result")
)

// WithTracerProvider makes the Client record a span per Do (idem.Do) with
// a child span per HTTP attempt following OpenTelemetry's HTTP client
// conventions (see docs/OBSERVABILITY.md), and inject the trace context
// into every attempt with the global propagator
// (otel.GetTextMapPropagator), as otelhttp does. Idempotency keys and
// intent names appear only as hashes. Default: no tracing, at no cost.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) error {
		if tp == nil {
			return errors.New("idem: WithTracerProvider: nil provider")
		}
		c.tracerProvider = tp
		return nil
	}
}

// WithMeterProvider makes the Client record its metrics (idem.client.*
// and http.client.request.duration, listed in docs/OBSERVABILITY.md) with
// mp. Default: no metrics, at no cost.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) error {
		if mp == nil {
			return errors.New("idem: WithMeterProvider: nil provider")
		}
		c.meterProvider = mp
		return nil
	}
}

// HashForTelemetry is how spans and metrics name an idempotency key or an
// intent name without showing it: the first 16 hex digits of its SHA-256.
// The logs' key_hash is its first 8.
func HashForTelemetry(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// telemetry is a Client's tracer and instruments. A Client without
// providers has none (a nil *telemetry), and every hook is then a nil
// check.
type telemetry struct {
	tracer       trace.Tracer // nil: no spans
	metrics      *clientMetrics
	secretParams map[string]bool
	now          func() time.Time
}

// newTelemetry builds the telemetry cfg asks for, nil when it asks for
// none.
func newTelemetry(cfg *config) *telemetry {
	if cfg.tracerProvider == nil && cfg.meterProvider == nil {
		return nil
	}
	t := &telemetry{secretParams: cfg.secretParams, now: time.Now}
	if cfg.tracerProvider != nil {
		t.tracer = cfg.tracerProvider.Tracer(instrumentationName, trace.WithSchemaURL(semconv.SchemaURL))
	}
	if cfg.meterProvider != nil {
		t.metrics = newClientMetrics(cfg.meterProvider, cfg.budget)
	}
	return t
}

// close unregisters the callbacks of observable instruments.
func (t *telemetry) close() {
	if t != nil && t.metrics != nil {
		t.metrics.close()
	}
}

// doObservation is what one Do learns for its span and metrics as it
// runs; it travels in the Do's context.
type doObservation struct {
	span  trace.Span // nil without tracing
	start time.Time
	// rec is the record the Do works on (updated in place as it settles);
	// stateBefore and attemptsBefore are what it was when Do found it.
	rec            *keystore.Record
	stateBefore    State
	attemptsBefore int
}

type doObservationKey struct{}

// do runs c.do(ctx, in) under a span and records its metrics.
func (t *telemetry) do(ctx context.Context, c *Client, in *Intent) (*http.Response, error) {
	if in == nil || in.Key == "" {
		return c.do(ctx, in)
	}
	obs := &doObservation{start: t.now()}
	if t.tracer != nil {
		ctx, obs.span = t.tracer.Start(ctx, "idem.Do",
			trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attrKeyHash.String(HashForTelemetry(in.Key))))
	}
	resp, err := c.do(context.WithValue(ctx, doObservationKey{}, obs), in)
	t.doDone(ctx, obs, resp, err)
	return resp, err
}

// sawRecord tells the Do's observation which record it works on (as Do
// found it); a no-op without telemetry.
func (t *telemetry) sawRecord(ctx context.Context, rec *keystore.Record) {
	if t == nil {
		return
	}
	obs, _ := ctx.Value(doObservationKey{}).(*doObservation)
	if obs == nil {
		return
	}
	obs.rec, obs.stateBefore, obs.attemptsBefore = rec, rec.State, rec.Attempts
	if obs.span != nil {
		attrs := []attribute.KeyValue{attrStateBefore.String(string(rec.State))}
		if name := keystore.BusinessName(rec.Name, rec.Principal); name != "" {
			attrs = append(attrs, attrNameHash.String(HashForTelemetry(name)))
		}
		obs.span.SetAttributes(attrs...)
	}
}

// doDone ends the Do's span and records what the Do came to.
func (t *telemetry) doDone(ctx context.Context, obs *doObservation, resp *http.Response, err error) {
	var state State
	if obs.rec != nil {
		state = obs.rec.State
	}
	outcome := string(state)
	if outcome == "" {
		outcome = "error"
	}
	replay := replayKind(resp)
	reason := ""
	if err != nil && replay != replayLocal {
		// A local replay of a Failed intent returns its error again; it is
		// a replay, not a new give-up.
		reason = giveUpReason(err)
	}
	var ge *GiveUpError
	unknown := (errors.As(err, &ge) && ge.OutcomeUnknown) || (obs.rec != nil && obs.rec.MayHaveExecuted)
	unsettled := state == Pending || state == Accepted
	if m := t.metrics; m != nil {
		m.recordDo(ctx, t.now().Sub(obs.start), outcome, replay, reason)
		if unsettled {
			m.pending.Add(ctx, 1, metric.WithAttributes(attrIntentState.String(string(state)), attrOutcomeUnknown.Bool(unknown)))
		}
		if obs.rec != nil && (unsettled || resumedToSettle(obs, state)) {
			m.pendingAge.Record(ctx, t.now().Sub(obs.rec.CreatedAt).Seconds(), metric.WithAttributes(attrIntentState.String(string(state))))
		}
	}
	span := obs.span
	if span == nil {
		return
	}
	attrs := []attribute.KeyValue{attrOutcome.String(outcome)}
	if obs.rec != nil {
		attrs = append(attrs, attrIntentAttempts.Int(obs.rec.Attempts))
	}
	if replay != "" {
		attrs = append(attrs, attrReplay.String(replay))
	}
	if unsettled {
		attrs = append(attrs, attrOutcomeUnknown.Bool(unknown))
	}
	if reason != "" {
		attrs = append(attrs, attrGiveUpReason.String(reason), semconv.ErrorTypeKey.String(reason))
		span.SetStatus(codes.Error, reason)
	}
	span.SetAttributes(attrs...)
	span.End()
}

// resumedToSettle reports whether a Do settled an intent that an earlier
// Do had tried and left unsettled: its age then is how long it stayed in
// doubt.
func resumedToSettle(obs *doObservation, after State) bool {
	wasOpen := obs.stateBefore == Pending || obs.stateBefore == Accepted
	return wasOpen && obs.attemptsBefore > 0 && after.Settled()
}

// Replay kinds (idem.replay).
const (
	replayLocal  = "local"
	replayServer = "server"
)

// replayKind says whether resp is a local replay, a server's replay, or
// neither ("").
func replayKind(resp *http.Response) string {
	switch {
	case IsLocalReplay(resp):
		return replayLocal
	case IsReplay(resp):
		return replayServer
	}
	return ""
}

// giveUpReason names why a Do returned an error, for idem.give_up.reason.
func giveUpReason(err error) string {
	var ge *GiveUpError
	if errors.As(err, &ge) && ge.Reason != nil {
		err = ge.Reason
	}
	switch {
	case errors.Is(err, ErrBudgetExhausted):
		return "budget_exhausted"
	case errors.Is(err, ErrRetriesExhausted):
		return "max_attempts"
	case errors.Is(err, ErrWaitBeyondDeadline):
		return "wait_beyond_deadline"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, ErrKeyReused):
		return "key_reused"
	case errors.Is(err, ErrOperationGone):
		return "operation_gone"
	case errors.Is(err, ErrOperationFailed):
		return "operation_failed"
	case errors.Is(err, ErrFinalFailure):
		return "final_failure"
	case errors.Is(err, ErrKeyExpired):
		return "key_expired"
	case errors.Is(err, ErrOutcomeUnknown):
		return "outcome_unknown"
	case errors.Is(err, ErrIntentBusy):
		return "intent_busy"
	case errors.Is(err, ErrCredentialsMissing), errors.Is(err, ErrCredentialsMismatch):
		return "credentials"
	case errors.Is(err, keystore.ErrCorrupt):
		return "keystore_corrupt"
	case errors.Is(err, ErrClosed):
		return "closed"
	}
	var ee *editorError
	if errors.As(err, &ee) {
		return "request_editor"
	}
	var we *storeWriteError
	if errors.As(err, &we) {
		return "keystore_write"
	}
	return "other"
}

// reconciled records a reconciler's verdict (or its error); a no-op
// without metrics.
func (t *telemetry) reconciled(ctx context.Context, o Outcome, err error) {
	if t == nil {
		return
	}
	result := o.String()
	if err != nil {
		result = "error"
	}
	if t.metrics != nil {
		t.metrics.reconciliations.Add(ctx, 1, metric.WithAttributes(attrReconcileResult.String(result)))
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.AddEvent("idem.reconciliation", trace.WithAttributes(attrReconcileResult.String(result)))
	}
}
