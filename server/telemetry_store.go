package server

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/trace"
)

// Store operations (idem.store.operation).
const (
	storeOpReserve  = "reserve"
	storeOpComplete = "complete"
	storeOpRelease  = "release"
	storeOpSweep    = "sweep"
)

// wrapStore is s measured: every operation's duration and errors, a span
// per operation, and what settling a key came to for the request's
// observation. s itself without telemetry.
func (t serverTelemetry) wrapStore(s Store) Store {
	if !t.enabled() {
		return s
	}
	return &observedStore{Store: s, tel: t}
}

// observedStore is a Store whose operations are measured.
type observedStore struct {
	Store
	tel serverTelemetry
}

func (s *observedStore) Reserve(ctx context.Context, scope Scope, key, fingerprint string, lease time.Duration) (*Reservation, *Record, error) {
	ctx, done := s.start(ctx, storeOpReserve)
	res, rec, err := s.Store.Reserve(ctx, scope, key, fingerprint, lease)
	done(err)
	if obs := observationFrom(ctx); obs != nil && err != nil {
		obs.reserveErr = true
	}
	return res, rec, err
}

func (s *observedStore) Complete(ctx context.Context, c Completion) error {
	ctx, done := s.start(ctx, storeOpComplete)
	err := s.Store.Complete(ctx, c)
	done(err)
	settled(ctx, "stored", err)
	return err
}

func (s *observedStore) Release(ctx context.Context, r Reservation) error {
	ctx, done := s.start(ctx, storeOpRelease)
	err := s.Store.Release(ctx, r)
	done(err)
	settled(ctx, "released", err)
	return err
}

func (s *observedStore) Sweep(ctx context.Context, limit int) (int, error) {
	ctx, done := s.start(ctx, storeOpSweep)
	n, err := s.Store.Sweep(ctx, limit)
	done(err)
	return n, err
}

// settled tells the request's observation what settling its key came to.
func settled(ctx context.Context, ok string, err error) {
	obs := observationFrom(ctx)
	if obs == nil {
		return
	}
	switch {
	case errors.Is(err, ErrFenced):
		obs.settlement = "fenced"
	case err != nil:
		obs.settlement = "store_error"
	default:
		obs.settlement = ok
	}
}

// start opens the span of one store operation; done ends it and records
// the operation's duration and error.
func (s *observedStore) start(ctx context.Context, op string) (context.Context, func(error)) {
	began := time.Now()
	var span trace.Span
	if s.tel.tracer != nil {
		ctx, span = s.tel.tracer.Start(ctx, "idem.store."+op,
			trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attrStoreOp.String(op)))
	}
	return ctx, func(err error) {
		errType := storeErrorType(err)
		if m := s.tel.metrics; m != nil {
			attrs := []attribute.KeyValue{attrStoreOp.String(op)}
			if errType != "" {
				attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
				m.storeErrors.Add(ctx, 1, metric.WithAttributes(attrs...))
			}
			m.storeDuration.Record(ctx, time.Since(began).Seconds(), metric.WithAttributes(attrs...))
		}
		if span != nil {
			if errType != "" {
				span.SetAttributes(semconv.ErrorTypeKey.String(errType))
				span.SetStatus(codes.Error, errType)
			}
			span.End()
		}
	}
}

// storeErrorType is a store error's error.type: "fenced" (the lease was
// lost to a newer request), "timeout", "canceled", or "store_error"; ""
// for no error.
func storeErrorType(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrFenced):
		return "fenced"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "store_error"
}

// once runs Once under an idem.once span, with the store measured, and
// counts its decision.
func (t serverTelemetry) once(ctx context.Context, store Store, scope Scope, id, fingerprint string, fn func(ctx context.Context) ([]byte, error), opts []Option) ([]byte, error) {
	obs := &observation{}
	if t.tracer != nil {
		ctx, obs.span = t.tracer.Start(ctx, "idem.once",
			trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithAttributes(attrKeyHash.String(TelemetryKeyHash(id))))
	}
	ctx = context.WithValue(ctx, observationKey{}, obs)
	observed := func(ctx context.Context) ([]byte, error) {
		obs.ran = true
		return fn(ctx)
	}
	// The same call without telemetry, on the measured store.
	plain := append(opts[:len(opts):len(opts)], func(c *config) { c.tel = serverTelemetry{} })
	result, err := Once(ctx, t.wrapStore(store), scope, id, fingerprint, observed, plain...)
	obs.decision = onceDecision(obs, err)
	if t.metrics != nil {
		attrs := []attribute.KeyValue{attrDecision.String(obs.decision)}
		if obs.settlement != "" {
			attrs = append(attrs, attrSettlement.String(obs.settlement))
		}
		t.metrics.once.Add(ctx, 1, metric.WithAttributes(attrs...))
	}
	obs.end()
	return result, err
}

// onceDecision names what a Once call came to.
func onceDecision(obs *observation, err error) string {
	switch {
	case obs.reserveErr:
		return decisionStoreUnavailable
	case obs.ran && obs.settlement == "fenced":
		return decisionFenced
	case obs.ran && err != nil:
		return decisionFailed
	case obs.ran:
		return decisionExecuted
	case err == nil:
		return decisionReplayed
	case errors.Is(err, ErrInProgress):
		return decisionInProgress
	case errors.Is(err, ErrKeyReused):
		return decisionKeyReused
	}
	return decisionError
}
