package idem

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idemkit/idem/keystore"
)

// pendingOperationStatuses are the operation `status` values that mean
// "not final yet".
var pendingOperationStatuses = map[string]bool{
	"pending":     true,
	"processing":  true,
	"running":     true,
	"queued":      true,
	"in_progress": true,
	"in-progress": true,
	"accepted":    true,
}

// poll follows an Accepted intent's operation: GET its Location (with the
// request editor, and with the intent's secrets only when the operation
// has the intent's origin; never the payload) until the
// operation is final, honouring Retry-After and bounded by WithPolling and
// ctx. A final operation makes the intent Succeeded with the operation's
// final document as its stored response, which poll returns. Otherwise
// the intent stays Accepted and poll returns the stored 202 with a nil
// error: the server has the request, only its result is not known yet.
// fresh says the 202 came from the network in this call (so it is not
// marked as a local replay).
func (c *Client) poll(ctx context.Context, rec *keystore.Record, fresh bool) (*http.Response, error) {
	accepted := func() (*http.Response, error) {
		return storedResponse(rec.Response, recordRequest(rec), !fresh), nil
	}
	if rec.Operation == "" || c.cfg.pollMax == 0 || rec.Response == nil {
		return accepted()
	}
	pctx, cancel := context.WithTimeout(ctx, c.cfg.pollMax)
	defer cancel()

	wait := c.pollWait(storedResponse(rec.Response, nil, false))
	for {
		if !sleepCtx(pctx, wait) {
			break
		}
		final, next := c.pollOnce(pctx, rec)
		if final != nil {
			return c.settleOperation(ctx, rec, final)
		}
		if next < 0 {
			break
		}
		wait = next
	}
	rec.UpdatedAt = c.cfg.now()
	if err := c.store.Update(context.WithoutCancel(ctx), rec); err != nil {
		c.log.WarnContext(ctx, "idem: storing poll state failed", "key", keyHash(rec.Key), "error", err.Error())
	}
	return accepted()
}

// finalAnswer is an operation's final answer: the response (body in
// memory) and what the keystore stores of it.
type finalAnswer struct {
	resp   *http.Response
	stored *keystore.Response
}

// pollOnce asks for the operation once. It returns the final answer, or
// else the wait before the next poll, negative when polling should stop
// (the poll itself gave up or failed for good).
func (c *Client) pollOnce(ctx context.Context, rec *keystore.Record) (final *finalAnswer, next time.Duration) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rec.Operation, nil)
	if err != nil {
		rec.LastError = fmt.Sprintf("polling the operation: %v", err)
		return nil, -1
	}
	if intentURL, err := url.Parse(rec.URL); err == nil && sameOrigin(intentURL, req.URL) {
		req.Header = c.secrets.get(rec.Key)
	}
	res := c.send(ctx, &call{req: req, logID: rec.Key, client: c.sender})
	if res.stop != nil {
		bufferLast(res.resp)
		rec.LastError = "polling the operation: " + res.giveUp(rec.Key).Error()
		return nil, -1
	}
	resp := res.resp
	if resp.StatusCode == http.StatusAccepted {
		bufferLast(resp)
		return nil, c.pollWait(resp)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		bufferLast(resp)
		rec.LastError = fmt.Sprintf("polling the operation: status %d", resp.StatusCode)
		return nil, -1
	}
	stored, truncated, err := capture(resp)
	if err != nil {
		rec.LastError = fmt.Sprintf("polling the operation: %v", err)
		return nil, c.cfg.pollInterval
	}
	if !truncated && operationPending(stored.Body) {
		return nil, c.pollWait(resp)
	}
	return &finalAnswer{resp: resp, stored: stored}, 0
}

// settleOperation stores the operation's final answer and makes the
// intent Succeeded.
func (c *Client) settleOperation(ctx context.Context, rec *keystore.Record, final *finalAnswer) (*http.Response, error) {
	rec.State = Succeeded
	rec.Response = final.stored
	rec.LastError = ""
	rec.UpdatedAt = c.cfg.now()
	if err := c.store.Update(context.WithoutCancel(ctx), rec); err != nil {
		return final.resp, fmt.Errorf("idem: storing the operation's result (the intent stays accepted): %w", err)
	}
	c.secrets.forget(rec.Key)
	c.log.DebugContext(ctx, "idem: operation settled", "key", keyHash(rec.Key))
	return final.resp, nil
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

// operationPending reports whether an operation document says it is not
// final yet. A body that is not a JSON object with a status is final.
func operationPending(body []byte) bool {
	var doc struct {
		Status string `json:"status"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return false
	}
	return pendingOperationStatuses[strings.ToLower(doc.Status)]
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
