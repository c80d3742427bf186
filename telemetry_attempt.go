package idem

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.39.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemkit/idem/dialect"
)

// attemptObservation is the telemetry of one call's attempts: the span of
// the attempt in flight and what every attempt of the call shares. It
// lives in the call's attemptPolicy; its zero value records nothing.
type attemptObservation struct {
	span  trace.Span
	start time.Time
	// retryReason is why the last attempt was retried, counted in
	// idem.client.retries once the retry is sent: a budget may still
	// refuse it after its wait.
	retryReason string
	// server holds server.address and server.port; urlFull the URL with
	// its secrets redacted. Computed on the first attempt.
	server  []attribute.KeyValue
	urlFull string
}

// startAttempt opens the span of the attempt r is about to make, as a
// child of the call's ctx, and injects its trace context into r's header
// with the global propagator. r's context becomes the span's. A no-op
// without telemetry.
func (t *telemetry) startAttempt(ctx context.Context, p *attemptPolicy, r *http.Request) {
	if t == nil {
		return
	}
	o := &p.obs
	o.start = t.now()
	if o.server == nil {
		o.server = serverAttributes(r.URL)
	}
	if reason := o.retryReason; reason != "" {
		o.retryReason = ""
		if m := t.metrics; m != nil {
			m.retries.Add(ctx, 1, metric.WithAttributes(attrRetryReason.String(reason)))
		}
	}
	if t.tracer == nil {
		return
	}
	if o.urlFull == "" {
		o.urlFull = redactedURL(r.URL, t.secretParams)
	}
	attempt := p.res.attempts + 1
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, semconv.HTTPRequestMethodKey.String(r.Method), semconv.URLFullKey.String(o.urlFull), attrAttempt.Int(attempt))
	attrs = append(attrs, o.server...)
	if attempt > 1 {
		attrs = append(attrs, semconv.HTTPRequestResendCountKey.Int(attempt-1))
	}
	spanCtx, span := t.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	o.span = span
	otel.GetTextMapPropagator().Inject(spanCtx, propagation.HeaderCarrier(r.Header))
	*r = *r.WithContext(spanCtx)
}

// judge is p's verdict on an attempt (check), recorded when there is
// telemetry: the attempt's span ends and its metrics are counted.
func (t *telemetry) judge(ctx context.Context, p *attemptPolicy, resp *http.Response, err error) (bool, error) {
	if t == nil {
		return p.check(ctx, resp, err)
	}
	verdict := dialect.Unjudged
	if resp != nil && p.cl.keyed {
		// The dialect's own verdict tells an in-progress or key-reused
		// answer apart, which the outcome folds into retry or final.
		d := &p.c.cfg.dialect
		verdict = d.Classify(answerOf(d, p.cl.req.Method, resp))
	}
	retry, stop := p.check(ctx, resp, err)
	t.attemptDone(ctx, p, resp, err, verdict, retry)
	return retry, stop
}

// attemptDone ends the span of the attempt just judged and records its
// metrics.
func (t *telemetry) attemptDone(ctx context.Context, p *attemptPolicy, resp *http.Response, err error, verdict dialect.Verdict, retry bool) {
	o := &p.obs
	res := &p.res
	method := p.cl.req.Method
	outcome := res.outcome.String()
	status := 0
	if resp != nil {
		status = resp.StatusCode
	}
	errType := attemptErrorType(status, err)
	reason := ""
	if retry {
		reason = retryReason(status, err, verdict)
	}
	conflict := ""
	switch verdict {
	case dialect.InProgress:
		conflict = "in_progress"
	case dialect.KeyReused:
		conflict = "key_reused"
	}
	if m := t.metrics; m != nil {
		m.recordAttempt(ctx, t.now().Sub(o.start), method, status, errType, outcome, o.server)
		if reason != "" {
			o.retryReason = reason // counted when the retry is sent
		}
		if conflict != "" {
			m.conflicts.Add(ctx, 1, metric.WithAttributes(attrConflict.String(conflict)))
		}
	}
	span := o.span
	o.span = nil
	if span == nil {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, attrAttemptOutcome.String(outcome))
	if status != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCodeKey.Int(status))
	}
	if errType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errType))
		span.SetStatus(codes.Error, errType)
	}
	if reason != "" {
		attrs = append(attrs, attrRetryReason.String(reason))
	}
	if conflict != "" {
		attrs = append(attrs, attrConflict.String(conflict))
	}
	if resp != nil && IsReplay(resp) {
		attrs = append(attrs, attrReplay.String(replayServer))
	}
	if !retry && res.stop != nil {
		attrs = append(attrs, attrGiveUpReason.String(giveUpReason(res.stop)))
	}
	span.SetAttributes(attrs...)
	span.End()
}

// retryReason names why an attempt is retried, for idem.retry.reason.
func retryReason(status int, err error, verdict dialect.Verdict) string {
	switch verdict {
	case dialect.InProgress:
		return "in_progress"
	case dialect.KeyReused:
		return "key_reused_in_doubt"
	}
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limited"
	case status == http.StatusRequestTimeout:
		return "request_timeout"
	case status == http.StatusTooEarly:
		return "too_early"
	case status == http.StatusServiceUnavailable:
		return "unavailable"
	case status >= 500:
		return "server_error"
	case status != 0:
		return "status_" + strconv.Itoa(status)
	case isTimeout(err):
		return "timeout"
	case !requestMayHaveBeenWritten(err):
		return "connect_error"
	}
	return "connection_lost"
}

// attemptErrorType is an attempt's error.type: its status for a 4xx or
// 5xx, a short name for a transport error, "" for anything else.
func attemptErrorType(status int, err error) string {
	switch {
	case status >= 400:
		return strconv.Itoa(status)
	case status != 0 || err == nil:
		return ""
	case isTimeout(err):
		return "timeout"
	case !requestMayHaveBeenWritten(err):
		return "connect_error"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "connection_lost"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// serverAttributes are server.address and server.port of u.
func serverAttributes(u *url.URL) []attribute.KeyValue {
	host := u.Hostname()
	port, _ := strconv.Atoi(u.Port())
	if port == 0 {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = 443
		default:
			port = 80
		}
	}
	return []attribute.KeyValue{semconv.ServerAddressKey.String(host), semconv.ServerPortKey.Int(port)}
}

// redactedURL is u for url.full: without user information at all, and
// with the value of every secret query parameter replaced (redactURL).
func redactedURL(u *url.URL, secret map[string]bool) string {
	out := *u
	out.User = nil
	return redactURL(&out, secret)
}
