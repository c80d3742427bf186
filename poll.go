package idem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/keystore"
)

// poll follows an Accepted intent's operation as Do documents it: GET its
// Location (with the request editor, and with the intent's secrets and
// Host only when the operation has the intent's origin; never the
// payload) until the operation is final, honouring Retry-After and
// bounded by WithPolling and ctx, then stores what came of it. fresh says
// the 202 came from the network in this call (so it is not marked as a
// local replay).
func (c *Client) poll(ctx context.Context, rec *keystore.Record, fresh bool) (*http.Response, error) {
	lastError := rec.LastError
	ans := c.followOperation(ctx, rec)
	if j, ok := judgeOperation(ans.verdict); ok {
		switch {
		case !j.unknown:
			return c.settleOperation(ctx, rec, j.state, ans, j.reason)
		case ans.verdict == verdictGone && c.pastRetention(rec):
			err := c.expire(ctx, rec, fmt.Sprintf("accepted more than the key retention (%s) ago and the operation is gone (status %d); reconcile it", c.cfg.retention, ans.status), ans.status)
			return c.reconcileOr(ctx, rec, nil, err)
		default:
			return c.operationUnproven(ctx, rec, ans, j.reason)
		}
	}
	switch ans.verdict {
	case verdictSilent:
		// A call whose ctx ended learnt nothing about the operation.
		if ctx.Err() == nil && c.pastRetention(rec) {
			err := c.expire(ctx, rec, fmt.Sprintf("accepted more than the key retention (%s) ago and the operation gives no answer; reconcile it", c.cfg.retention), ans.status)
			return c.reconcileOr(ctx, rec, nil, err)
		}
	}
	// Polls that learnt something are recorded; when no poll was made
	// (polling disabled, the bound or ctx ended first) the record is as
	// it was stored and writing it again would only cost a commit.
	if ans.attempts > 0 || rec.LastError != lastError {
		rec.UpdatedAt = c.cfg.now()
		if err := c.write(ctx, c.updateFn, rec); err != nil {
			c.log.WarnContext(ctx, "idem: storing poll state failed", "key", keyHash(rec.Key), "error", err.Error())
		}
	}
	if rec.Response == nil {
		return nil, nil
	}
	return storedResponse(rec.Response, recordRequest(rec), !fresh), nil
}

// pollVerdict is what polling learnt of an operation.
type pollVerdict int

const (
	// verdictUnasked: nothing was asked; ctx or the polling bound ended
	// before the first poll was due.
	verdictUnasked pollVerdict = iota
	// verdictSilent: no answer about the operation: transport errors or
	// 5xx after the retries, credentials refused, or nothing to poll
	// (no usable Location, polling disabled).
	verdictSilent
	// verdictPending: the server reports the operation not final yet (or
	// not found yet, within the grace).
	verdictPending
	// verdictDone: a final 2xx document.
	verdictDone
	// verdictGone: 404 or 410 after the grace.
	verdictGone
	// verdictUnproven: an answer that ends polling but proves nothing of
	// the operation: a 4xx (other than gone, and other than those about
	// the poll's credentials or pace), or a 2xx document whose status the
	// dialect does not document.
	verdictUnproven
	// verdictOperationFailed: a final 2xx document whose status says the
	// operation failed or was canceled.
	verdictOperationFailed
)

// pollAnswer is what polling an operation came to.
type pollAnswer struct {
	verdict pollVerdict
	// final is the answer of a done or failed operation.
	final *finalAnswer
	// why says what an unproven or gone answer was.
	why string
	// next is the wait before polling again; <= 0 stops polling.
	next time.Duration
	// status is the last HTTP status seen, 0 if none; attempts counts
	// the requests made.
	status, attempts int
}

// finalAnswer is an operation's final answer: the response (body in
// memory) and what the keystore stores of it.
type finalAnswer struct {
	resp   *http.Response
	stored *keystore.Response
}

// followOperation polls rec's operation until a poll says to stop or the
// polling bound or ctx ends, and returns the last poll's answer.
func (c *Client) followOperation(ctx context.Context, rec *keystore.Record) pollAnswer {
	if rec.Operation == "" || c.cfg.pollMax == 0 || rec.Response == nil {
		return pollAnswer{verdict: verdictSilent}
	}
	pctx, cancel := context.WithTimeout(ctx, c.cfg.pollMax)
	defer cancel()

	last := pollAnswer{verdict: verdictUnasked}
	attempts := 0
	wait := c.pollWait(storedResponse(rec.Response, nil, false))
	for sleepCtx(pctx, wait) {
		ans := c.pollOnce(pctx, rec)
		attempts += ans.attempts
		if ans.verdict == verdictSilent && pctx.Err() != nil {
			// The polling bound or ctx cut this poll short: it learnt
			// nothing, and the verdict before it stands.
			break
		}
		last = ans
		if last.next <= 0 {
			break
		}
		wait = last.next
	}
	last.attempts = attempts
	return last
}

// pollOnce asks for the operation once and judges the answer, recording
// in rec.LastError why an answer was not final.
func (c *Client) pollOnce(ctx context.Context, rec *keystore.Record) pollAnswer {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rec.Operation, nil)
	if err != nil {
		rec.LastError = fmt.Sprintf("polling the operation: %v", err)
		return pollAnswer{verdict: verdictSilent}
	}
	if intentURL, err := url.Parse(rec.URL); err == nil && sameOrigin(intentURL, req.URL) {
		req.Header = secretsOf(c.local.secrets(rec.Key), c.cfg.secretHeaders)
		// The intent's secret query parameters too: the stored operation
		// URL goes without them, as the intent's does.
		withSecretParams(req, c.local.params(rec.Key))
		if rec.Host != "" {
			req.Host = rec.Host
		}
	}
	res := c.send(ctx, &call{req: req, logID: rec.Key, client: c.sender})
	ans := pollAnswer{verdict: verdictSilent, status: res.lastStatus, attempts: res.attempts}
	if res.stop != nil {
		bufferLast(res.resp)
		if ctx.Err() == nil {
			// A poll cut short by ctx learnt nothing worth recording.
			rec.LastError = "polling the operation: " + res.giveUp(rec.Key).Error()
		}
		return ans
	}
	resp := res.resp
	code := resp.StatusCode
	switch {
	case code == http.StatusAccepted:
		bufferLast(resp)
		ans.verdict, ans.next = verdictPending, c.pollWait(resp)
	case code >= 200 && code <= 299:
		stored, truncated, err := capture(resp)
		switch {
		case err != nil:
			rec.LastError = fmt.Sprintf("polling the operation: %v", err)
			ans.next = c.cfg.pollInterval
		case truncated:
			ans.verdict, ans.final = verdictDone, &finalAnswer{resp: resp, stored: stored}
		default:
			switch st := c.cfg.dialect.OperationStatus(stored.Body); st {
			case dialect.OperationPending:
				ans.verdict, ans.next = verdictPending, c.pollWait(resp)
			case dialect.OperationFailed, dialect.OperationCanceled:
				ans.verdict, ans.final = verdictOperationFailed, &finalAnswer{resp: resp, stored: stored}
			case dialect.OperationSucceeded:
				ans.verdict, ans.final = verdictDone, &finalAnswer{resp: resp, stored: stored}
			default:
				// A word the dialect does not document is no verdict.
				ans.verdict = verdictUnproven
				ans.why = fmt.Sprintf("the operation answered %d with a status dialect %s does not document (%s); outcome unknown", code, c.cfg.dialect.Name, statusExcerpt(stored.Body))
			}
		}
	case operationGoneStatus(code) && c.withinGrace(rec):
		bufferLast(resp)
		rec.LastError = fmt.Sprintf("polling the operation: status %d within %s of the 202; polled again", code, c.cfg.opGrace)
		ans.verdict, ans.next = verdictPending, c.pollWait(resp)
	case operationGoneStatus(code):
		bufferLast(resp)
		ans.verdict = verdictGone
		ans.why = fmt.Sprintf("the operation answered %d more than %s after the 202; the 202 proved the request was taken, so its outcome is unknown", code, c.cfg.opGrace)
	case operationRefused(code):
		// The 202 proved the server took the request; a refusal of a GET
		// of its operation says nothing about what became of it.
		bufferLast(resp)
		ans.verdict = verdictUnproven
		ans.why = fmt.Sprintf("the operation answered %d, which proves nothing about the accepted request; outcome unknown", code)
	default:
		bufferLast(resp)
		rec.LastError = fmt.Sprintf("polling the operation: status %d", code)
	}
	return ans
}

// operationGoneStatus reports whether an operation's status says it does
// not exist (any more).
func operationGoneStatus(code int) bool {
	return code == http.StatusNotFound || code == http.StatusGone
}

// operationRefused reports whether an operation's status is a refusal that
// ends polling: a 4xx that is not "gone", not retryable, and not about the
// credentials of the poll (which a process resuming after a restart may
// lack). None of them says what became of the accepted request.
func operationRefused(code int) bool {
	if code < 400 || code > 499 {
		return false
	}
	switch code {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired,
		http.StatusRequestTimeout, http.StatusTooEarly, http.StatusTooManyRequests,
		http.StatusNotFound, http.StatusGone:
		return false
	}
	return true
}

// acceptedAt is when rec's 202 arrived; an intent accepted before that
// time was recorded counts from its creation.
func acceptedAt(rec *keystore.Record) time.Time {
	if rec.AcceptedAt.IsZero() {
		return rec.CreatedAt
	}
	return rec.AcceptedAt
}

// withinGrace reports whether rec's 202 is recent enough that a missing
// operation may only not be visible yet.
func (c *Client) withinGrace(rec *keystore.Record) bool {
	return c.cfg.now().Sub(acceptedAt(rec)) < c.cfg.opGrace
}

// pastRetention reports whether rec's 202 is older than the retention, so
// the server may have forgotten the operation with the key.
func (c *Client) pastRetention(rec *keystore.Record) bool {
	return c.cfg.now().Sub(acceptedAt(rec)) > c.cfg.retention
}

// settleOperation stores the operation's final answer with the intent in
// state (Succeeded, or Failed for reason) and returns that answer.
func (c *Client) settleOperation(ctx context.Context, rec *keystore.Record, state State, ans pollAnswer, reason error) (*http.Response, error) {
	rec.State = state
	rec.Response = ans.final.stored
	rec.LastError = ""
	rec.UpdatedAt = c.cfg.now()
	var callErr error
	if reason != nil {
		ge := &GiveUpError{Reason: reason, Attempts: ans.attempts, LastStatus: ans.status, Key: rec.Key}
		rec.LastError = ge.Error()
		callErr = ge
	}
	if err := c.write(ctx, c.updateFn, rec); err != nil {
		return ans.final.resp, errors.Join(callErr, fmt.Errorf("idem: storing the operation's answer (the intent stays accepted): %w", err))
	}
	c.forgetSecrets(rec.Key)
	c.log.DebugContext(ctx, "idem: operation settled", "key", keyHash(rec.Key), "state", string(state), "status", ans.status)
	return ans.final.resp, callErr
}

// operationUnproven records an answer that ends polling without proving
// the operation's outcome: the intent stays Accepted (a later Do polls
// again), why is its last error, and the call's error matches reason and
// ErrOutcomeUnknown. The Reconciler, when there is one, is asked.
func (c *Client) operationUnproven(ctx context.Context, rec *keystore.Record, ans pollAnswer, reason error) (*http.Response, error) {
	ge := &GiveUpError{Reason: reason, Attempts: ans.attempts, LastStatus: ans.status, Key: rec.Key, OutcomeUnknown: true, LastErr: errors.New(ans.why)}
	rec.LastError = ge.Error()
	rec.UpdatedAt = c.cfg.now()
	var err error = ge
	if werr := c.write(ctx, c.updateFn, rec); werr != nil {
		err = errors.Join(ge, fmt.Errorf("idem: storing the poll's answer: %w", werr))
	}
	c.log.WarnContext(ctx, "idem: the accepted operation's answer proves nothing; reconcile it", "key", keyHash(rec.Key), "status", ans.status)
	return c.reconcileOr(ctx, rec, storedResponse(rec.Response, recordRequest(rec), false), err)
}

// statusExcerpt quotes at most the first 64 bytes of an operation
// document's "status" member, or of the body when it has none, for an
// error message.
func statusExcerpt(body []byte) string {
	var doc struct {
		Status json.RawMessage `json:"status"`
	}
	b := body
	if json.Unmarshal(body, &doc) == nil && doc.Status != nil {
		b = doc.Status
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return fmt.Sprintf("%q", b)
}

// pollWait is the server's Retry-After (capped by the ceiling), or the
// polling interval when there is none. The interval is also the shortest
// wait: a server answering "Retry-After: 0" on every poll must not turn
// polling into a busy loop.
func (c *Client) pollWait(resp *http.Response) time.Duration {
	if hint, ok := retryAfterHint(resp, c.cfg.now(), c.cfg.raCeiling); ok {
		return max(hint, c.cfg.pollInterval)
	}
	return c.cfg.pollInterval
}

// operationURL resolves a 202's Location against the request URL (RFC
// 3986, section 5), or returns "" when there is nothing to poll: an
// unparsable Location, or one that is not an http or https URL.
func operationURL(requestURL, location string) string {
	base, err := url.Parse(requestURL)
	if err != nil {
		return ""
	}
	loc, err := url.Parse(location)
	if err != nil {
		return ""
	}
	op := base.ResolveReference(loc)
	switch strings.ToLower(op.Scheme) {
	case "http", "https":
	default:
		return ""
	}
	if op.Host == "" {
		return ""
	}
	return op.String()
}

// sleepCtx waits d or until ctx ends; it reports whether the wait ran out
// (true) rather than ctx (false). A wait that would outlive ctx's deadline
// is not started.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= d {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
