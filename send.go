package idem

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/idemkit/idem/dialect"
)

// call is one logical request: what to send on every attempt and how to
// judge the answers. Do, polling and Transport all send through it.
type call struct {
	// req is the template of every attempt: method, URL, Host, context.
	// Its Header is the base set of headers (stored + secrets).
	req *http.Request
	// ownHeader says req, its Header and their values were built for
	// this call alone: the first attempt is req itself when it carries
	// the call's context, and without a request editor it sends that
	// header map itself instead of a copy (later attempts still copy it).
	ownHeader bool
	body      []byte
	// key, when set, is sent as Idempotency-Key on every attempt.
	key string
	// keyValue holds the key header's value, the one value slice every
	// attempt's header refers to (nobody writes to it before the call
	// returns), made by the first attempt.
	keyValue [1]string
	// keyed says whether the request carries a key (set here or by the
	// caller): it decides whether an ambiguous failure may be retried.
	keyed bool
	// freshKey says the key was minted for this call and never sent
	// before it: an in-progress answer (409) to its first attempt cannot
	// be about the key, since no earlier request carries it (see
	// inProgressOfAnother).
	freshKey bool
	// logID is the key that names the call in logs; only its hash is
	// ever logged, and only computed when debug logging is on.
	logID string
	// client sends the attempts; its transport never closes the pool.
	client *http.Client
	// doubt says an earlier attempt may have taken effect: a "key
	// reused" answer may then be the server holding the key for it, as
	// some providers answer a duplicate of a request still running, and
	// is retried like an in-progress answer.
	doubt bool
	// checkPrincipal says every attempt must carry the credentials of
	// principal (a fingerprint) and the secret headers secretNames, or is
	// not sent.
	checkPrincipal bool
	principal      string
	secretNames    []string
	// principalProven says the base header carries exactly the secret
	// headers principal was computed from, and no request editor may
	// change them (Client.provesPrincipal): the attempts are principal's
	// without computing it again.
	principalProven bool
	// retentionEnd, when set, is when the server may forget the key (the
	// intent's creation plus the retention): no attempt is started whose
	// worst case ends after it (withinRetention).
	retentionEnd time.Time
}

// sendResult is how a call ended. When stop is nil, resp is a final answer
// (success, 202, final failure, key reused) with its body unread.
// Otherwise the call gave up and resp is the last answer seen, if any.
type sendResult struct {
	resp       *http.Response
	outcome    outcome
	stop       error
	attempts   int
	lastStatus int
	lastErr    error
	hint       time.Duration
	unknown    bool
}

// giveUp describes a stopped call as the error callers match on.
func (r *sendResult) giveUp(key string) *GiveUpError {
	return &GiveUpError{
		Reason:         r.stop,
		Attempts:       r.attempts,
		LastStatus:     r.lastStatus,
		LastErr:        r.lastErr,
		RetryAfter:     r.hint,
		Key:            key,
		OutcomeUnknown: r.unknown,
	}
}

// prepareAttempt sets the headers of one attempt: the base set, the
// request editor's, then the key, which the editor cannot change. Each attempt gets its own header map, so an
// earlier attempt still being torn down never sees it change. The one
// exception is a first attempt with no editor of a call that owns its
// header (call.ownHeader): it takes the template itself, which then
// changes only by the key set below, before it is sent, and later
// attempts copy it.
func (c *Client) prepareAttempt(ctx context.Context, r *http.Request, cl *call, first bool) error {
	h := cl.req.Header
	if !first || !cl.ownHeader || c.cfg.editor != nil {
		h = h.Clone()
	}
	if h == nil {
		h = http.Header{}
	}
	r.Header = h
	if c.cfg.editor != nil {
		if err := c.cfg.editor(ctx, r); err != nil {
			// The caller's message may name the URL: it is told
			// without the attempt's secrets, as a transport error is.
			return redactError(&editorError{err: err}, r.URL, c.cfg.secretParams)
		}
	}
	if cl.checkPrincipal {
		if err := c.checkCredentials(r, cl); err != nil {
			return err
		}
	}
	if name := c.cfg.dialect.KeyHeader; cl.key != "" && name != "" {
		// Set last, over whatever the editor wrote under any spelling:
		// every attempt carries the one key.
		if r.Header == nil {
			r.Header = http.Header{}
		}
		for n := range r.Header {
			if strings.EqualFold(n, name) {
				delete(r.Header, n)
			}
		}
		if cl.keyValue[0] == "" {
			cl.keyValue[0] = c.keyHeaderValue(cl.key)
		}
		r.Header[http.CanonicalHeaderKey(name)] = cl.keyValue[:1:1]
	}
	return nil
}

// editorError marks a failure of the request editor, so the give-up says
// where it came from.
type editorError struct{ err error }

func (e *editorError) Error() string { return "idem: request editor: " + e.err.Error() }
func (e *editorError) Unwrap() error { return e.err }

// keyHeaderValue is the key header's value for key: bare, or an RFC 8941
// String when the dialect or WithQuotedKeys asks for the quoted form.
func (c *Client) keyHeaderValue(key string) string {
	if c.cfg.quotedKeys {
		return dialect.QuoteKey(key)
	}
	return c.cfg.dialect.HeaderValue(key)
}

// attemptPolicy judges the attempts of one call (check): it carries the
// call (method, keyed), the wait it computed for the next attempt, and
// records what it saw for the give-up error.
type attemptPolicy struct {
	c    *Client
	cl   *call
	res  sendResult
	wait time.Duration
	// kept is the last answer that was retried, body in memory, for the
	// give-up of a call whose context ends during the wait after it.
	kept *http.Response
	// obs is the telemetry of the attempts (telemetry_attempt.go).
	obs attemptObservation
}

func (p *attemptPolicy) check(ctx context.Context, resp *http.Response, err error) (bool, error) {
	res := &p.res
	res.attempts++
	now := p.c.cfg.now()
	method := p.cl.req.Method
	if err != nil {
		res.lastErr = err
	}
	if resp != nil {
		res.lastStatus = resp.StatusCode
	}
	o := classify(&p.c.cfg.dialect, method, p.cl.keyed, resp, err)
	if o == outcomeKeyReused && (p.cl.doubt || res.unknown) {
		o = outcomeRetryUnsure
	}
	if o == outcomeRetryUnsure && p.inProgressOfAnother(method, resp) {
		o = outcomeRefused
	}
	res.outcome = o
	if mayHaveTakenEffect(method, o) {
		res.unknown = true
	}
	p.log(ctx, resp, err, o)

	switch o {
	case outcomeSuccess, outcomeAccepted:
		budgetAccepted(p.c.cfg.budget, now)
		return false, nil
	case outcomeKeyReused, outcomeRejected, outcomeRefused, outcomeUnresolvable:
		// A final answer; what it settles depends on the intent's
		// history, which the caller knows.
		return false, nil
	case outcomeUnknown:
		return p.stop(ErrOutcomeUnknown)
	}

	if ctxErr := ctx.Err(); ctxErr != nil {
		return p.stop(ctxErr)
	}
	var hint time.Duration
	var hasHint bool
	if resp != nil {
		if hint, hasHint = retryAfterHint(resp, now, p.c.cfg.raCeiling); hasHint {
			res.hint = hint
		}
	}
	if res.attempts >= p.c.cfg.maxAttempts {
		return p.stop(ErrRetriesExhausted)
	}
	wait, werr := nextWait(ctx, now, p.c.cfg.backoff, res.attempts-1, hint, hasHint)
	if werr != nil {
		return p.stop(werr)
	}
	if err := withinRetention(ctx, p.cl, now, wait); err != nil {
		return p.stop(err)
	}
	if resp != nil {
		// Read before the budget may hold the retry, so the connection
		// goes back to the pool meanwhile.
		p.kept = keepRetried(resp)
	}
	wait, berr := budgetRetry(ctx, p.c.cfg.budget, now, wait)
	if berr != nil {
		return p.stop(berr)
	}
	p.wait = wait
	return true, nil
}

// inProgressOfAnother reports whether resp, answering this call's first
// attempt, says "in progress" (409, draft-07 §2.7) for a key minted for
// this call: no earlier request carries that key, so the answer cannot be
// its request still running. It is the server's own answer to this
// request (a business conflict), final, and retrying it would only repeat
// it.
func (p *attemptPolicy) inProgressOfAnother(method string, resp *http.Response) bool {
	if !p.cl.freshKey || p.res.attempts != 1 || resp == nil || resp.StatusCode < 400 {
		return false
	}
	d := &p.c.cfg.dialect
	return d.Classify(answerOf(d, method, resp)) == dialect.InProgress
}

// retriedBodyLimit bounds how much of a retried answer's body is read
// into memory; error documents are far smaller.
const retriedBodyLimit = 1 << 20

// keepRetried reads a retried answer's body to its end (within
// retriedBodyLimit), so its connection goes back to the pool whatever the
// body's size, and returns a copy of the answer to hand back should the
// call end during the wait. resp's own body is replaced by the bytes read.
func keepRetried(resp *http.Response) *http.Response {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, retriedBodyLimit))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	kept := *resp
	kept.Body = io.NopCloser(bytes.NewReader(body))
	kept.ContentLength = int64(len(body))
	return &kept
}

// stop ends the call: send then returns the last response, body intact,
// with the give-up.
func (p *attemptPolicy) stop(reason error) (bool, error) {
	p.res.stop = reason
	return false, reason
}

func (p *attemptPolicy) log(ctx context.Context, resp *http.Response, err error, o outcome) {
	if !p.c.debugEnabled(ctx) {
		return
	}
	attrs := []any{"key", keyHash(p.cl.logID), "method", p.cl.req.Method, "attempt", p.res.attempts, "outcome", o.String()}
	if resp != nil {
		attrs = append(attrs, "status", resp.StatusCode)
	}
	if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	p.c.log.DebugContext(ctx, "idem: attempt", attrs...)
}

// mayHaveTakenEffect reports whether an attempt of a non-idempotent
// request whose result meant o may have changed state on the server
// without the client holding its final answer.
func mayHaveTakenEffect(method string, o outcome) bool {
	if isIdempotentMethod(method) {
		return false
	}
	switch o {
	case outcomeRetryUnsure, outcomeUnresolvable, outcomeUnknown:
		return true
	}
	return false
}

// shieldedTransport keeps net/http from resending a request on its own
// (see unreplayable). It also hides CloseIdleConnections of the pool it
// wraps, which the pool's owner alone may call.
type shieldedTransport struct{ rt http.RoundTripper }

func (s shieldedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return s.rt.RoundTrip(unreplayable(r))
}

// unreplayable returns r as net/http's Transport must not resend it by
// itself. The Transport silently sends a request again when a reused
// connection dies after the request was written, if the request is
// "replayable": an idempotent method, or one carrying an Idempotency-Key
// header, with a body it can rewind (GetBody). Such a resend would skip
// the client's backoff, budget and attempt count, so for a non-idempotent
// method the attempt goes without GetBody, and a request without a body
// gets an empty one the Transport cannot rewind. Every request on the
// wire is then an attempt the client decided; the client's own retries
// rebuild the body. GetBody stays on the request the http.Client sees,
// above this transport, for the redirects it follows (307, 308).
func unreplayable(r *http.Request) *http.Request {
	if isIdempotentMethod(r.Method) {
		return r
	}
	if r.GetBody == nil && r.Body != nil && r.Body != http.NoBody {
		return r
	}
	out := r.WithContext(r.Context()) // a shallow copy, as RoundTrip may not change r
	out.GetBody = nil
	if out.Body == nil || out.Body == http.NoBody {
		out.Body = emptyBody{}
		out.ContentLength = 0
	}
	return out
}

// emptyBody is a request body with nothing in it that net/http cannot
// recognise as empty ahead of time, and so cannot rewind.
type emptyBody struct{}

func (emptyBody) Read([]byte) (int, error) { return 0, io.EOF }
func (emptyBody) Close() error             { return nil }

// shieldedClient is hc with its transport shielded.
func shieldedClient(hc *http.Client) *http.Client {
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &http.Client{
		Transport:     shieldedTransport{rt: rt},
		CheckRedirect: hc.CheckRedirect,
		Jar:           hc.Jar,
		Timeout:       hc.Timeout,
	}
}
