package idem

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/idemkit/idem/keystore"
)

// sendPending sends a Pending intent and stores what came of it.
//
// The answer settles the intent only when it proves the outcome (see
// "Ambiguity is sticky" in the protocol): once an attempt may have taken
// effect, a refusal that proves nothing (401, 403, an unexpected 4xx)
// leaves the intent Pending, with MayHaveExecuted recorded, and the error
// matches ErrOutcomeUnknown. An intent counts as possibly sent unless this
// Client began it, or saw its every attempt answered "not executed", and
// nothing was sent since: another process may have sent it before a crash
// that kept it from recording so.
//
// begun, when not nil, is what Begin built for rec (see begunIntent).
func (c *Client) sendPending(ctx context.Context, rec *keystore.Record, begun *begunIntent) (*http.Response, error) {
	if begun == nil {
		if err := c.checkIntegrity(rec); err != nil {
			return nil, err
		}
	}
	req, err := attemptRequest(ctx, rec, begun)
	if err != nil {
		return nil, err
	}
	if rec.Host != "" {
		req.Host = rec.Host
	}
	secrets, params, unsent := c.local.forSend(rec.Key)
	withSecretParams(req, params)
	// The first attempt may send this header itself (ownHeader), so it
	// shares no value slice with the record: the one Begin built for it,
	// or the record's stored headers with the kept secrets.
	if sent := begun.takeSent(secrets); sent != nil {
		req.Header = sent
		// The map is also what the Client keeps the secrets in, and the
		// caller gets it back in resp.Request: an intent this call leaves
		// unsettled keeps a copy instead, made before the caller can
		// change the map.
		defer c.local.keepOwnCopy(rec.Key, sent, c.cfg.secretHeaders)
	} else {
		req.Header = withSecretsOf(rec.Header, secrets, c.cfg.secretHeaders)
	}
	doubt := rec.MayHaveExecuted || !unsent
	res := c.send(ctx, &call{
		req:       req,
		ownHeader: true,
		body:      rec.Body,
		key:       rec.Key,
		keyed:     true,
		logID:     rec.Key,
		client:    c.sender,
		doubt:     doubt,

		checkPrincipal:  true,
		principal:       rec.Principal,
		secretNames:     rec.SecretHeaders,
		principalProven: c.provesPrincipal(begun, secrets, params),
		retentionEnd:    rec.CreatedAt.Add(c.cfg.retention),
	})
	rec.Attempts += res.attempts
	rec.UpdatedAt = c.cfg.now()
	if res.unknown {
		rec.MayHaveExecuted = true
	}
	if res.stop != nil {
		return c.stopped(ctx, rec, res, doubt)
	}
	j := judgeAnswer(res.outcome, doubt || res.unknown)
	if j.unknown {
		rec.MayHaveExecuted = true
		return c.unsettled(ctx, rec, res, j.why(res.lastStatus, res.outcome))
	}
	return c.storeAnswer(ctx, rec, res, j)
}

// stopped handles a send that stopped without an answer to judge. It is
// a function of its own so that the target of errors.As, which escapes,
// is allocated only for a send that stopped, not on every call.
func (c *Client) stopped(ctx context.Context, rec *keystore.Record, res *sendResult, doubt bool) (*http.Response, error) {
	var reached *retentionReachedError
	if errors.As(res.stop, &reached) {
		// The server may forget the key before another attempt could
		// end: the intent is expired, and only a reconciliation can
		// tell what its earlier attempts did.
		bufferLast(res.resp)
		err := c.expire(ctx, rec, reached.Error(), res.lastStatus)
		return c.reconcileOr(ctx, rec, nil, err)
	}
	return c.stayPending(ctx, rec, res, !doubt && !res.unknown)
}

// storeAnswer stores a final answer that proves the intent's outcome, as
// judgeAnswer judged it in j (a success, a 202, key reuse, a rejection, a
// refusal when no attempt may have taken effect), and returns it.
func (c *Client) storeAnswer(ctx context.Context, rec *keystore.Record, res *sendResult, j judgement) (*http.Response, error) {
	settles := j.state != Accepted // an Accepted record is polled on, and copied by its write
	stored, truncated, err := captureAnswer(res.resp, settles && c.storeEncodesSettled())
	if err != nil {
		// The server answered but the answer was lost on the way: the
		// effect may have happened, and a resume will get the replay.
		res.stop, res.lastErr, res.unknown, res.resp = ErrOutcomeUnknown, err, true, nil
		rec.MayHaveExecuted = true
		return c.stayPending(ctx, rec, res, false)
	}
	resp := res.resp
	rec.Response = stored
	rec.LastError = ""
	if truncated {
		rec.LastError = fmt.Sprintf("response body over %d bytes; not kept for local replays", MaxBodySize)
	}
	var callErr error
	rec.State = j.state
	switch j.state {
	case Accepted:
		rec.AcceptedAt = rec.UpdatedAt
		// Stored without secret query parameters, as the intent's URL
		// is; polls of the intent's origin carry the intent's own.
		rec.Operation, _ = c.withoutSecretParams(operationURL(rec.URL, resp.Header.Get("Location")))
	case Failed:
		callErr = &GiveUpError{Reason: j.reason, Attempts: res.attempts, LastStatus: resp.StatusCode, Key: rec.Key}
	}
	if callErr != nil {
		rec.LastError = callErr.Error()
	}
	// Stored even when ctx has ended (within the write grace): the answer
	// is what makes the intent final, and losing it would send the caller
	// to the server again. A settled record is never modified again
	// (only read by Do's caller through Intent.refresh), so the store may
	// keep it as it is; an Accepted one is still changed by polling and
	// is copied.
	if rec.State != Accepted {
		err = c.writeSettled(ctx, rec)
	} else {
		err = c.write(ctx, c.updateFn, rec)
	}
	if err != nil {
		return resp, errors.Join(callErr, fmt.Errorf("idem: storing the answer (the intent stays pending; a resume gets the server's replay): %w", err))
	}
	if c.debugEnabled(ctx) {
		c.log.DebugContext(ctx, "idem: intent settled", "key", keyHash(rec.Key), "state", string(rec.State), "status", resp.StatusCode)
	}
	if rec.State == Accepted {
		return c.poll(ctx, rec, true)
	}
	c.forgetSecrets(rec.Key)
	return resp, callErr
}

// unsettled records a final answer that does not settle the intent: it
// stays Pending, may have taken effect, and the error matches
// ErrOutcomeUnknown with why as its last error. The Reconciler, when there
// is one, is asked what happened.
func (c *Client) unsettled(ctx context.Context, rec *keystore.Record, res *sendResult, why error) (*http.Response, error) {
	res.stop, res.unknown = ErrOutcomeUnknown, true
	res.lastErr = why
	resp, err := c.stayPending(ctx, rec, res, false)
	c.log.WarnContext(ctx, "idem: answer does not settle an intent that may have taken effect; reconcile it", "key", keyHash(rec.Key), "status", res.lastStatus)
	return c.reconcileOr(ctx, rec, resp, err)
}

// stayPending records a give-up durably (attempts, last error) and
// returns the give-up error with the last response, if any, buffered.
// unsent says nothing was executed: every attempt of this call, and every
// earlier one, was answered "not executed".
func (c *Client) stayPending(ctx context.Context, rec *keystore.Record, res *sendResult, unsent bool) (*http.Response, error) {
	ge := res.giveUp(rec.Key)
	rec.LastError = ge.Error()
	resp := bufferLast(res.resp)
	c.log.DebugContext(ctx, "idem: gave up; intent stays pending", "key", keyHash(rec.Key), "attempts", res.attempts, "reason", fmt.Sprint(ge.Reason))
	// The record is written even when ctx has ended (within the write
	// grace): losing the attempt count would hide how often the intent
	// was tried.
	if err := c.write(ctx, c.updateFn, rec); err != nil {
		return resp, errors.Join(ge, fmt.Errorf("idem: storing the attempts: %w", err))
	}
	if unsent {
		c.local.markUnsent(rec.Key)
	}
	return resp, ge
}

// bufferLast reads the last response of a give-up into memory, so the
// connection goes back to the pool whether or not the caller closes it.
func bufferLast(resp *http.Response) *http.Response {
	if resp == nil {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodySize))
	resp.Body.Close()
	if err != nil {
		body = nil
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	return resp
}

// withSecretsOf is a copy of stored with the secret headers of sent (the
// header as Begin was given it, whose names are canonical; those secret
// names) set over it, all values in one new slice (as Header.Clone keeps
// them).
func withSecretsOf(stored, sent http.Header, secret map[string]bool) http.Header {
	total, n := 0, len(stored)
	for _, values := range stored {
		total += len(values)
	}
	for name, values := range sent {
		if secret[name] {
			total += len(values)
			n++
		}
	}
	all := make([]string, 0, total)
	h := make(http.Header, n)
	set := func(name string, values []string) {
		if values == nil {
			h[name] = nil
			return
		}
		all = append(all, values...)
		h[name] = all[len(all)-len(values) : len(all) : len(all)]
	}
	for name, values := range stored {
		set(name, values)
	}
	for name, values := range sent {
		if secret[name] {
			set(name, values)
		}
	}
	return h
}

// secretsOf is a copy of the secret headers of sent (as withSecretsOf
// reads them), nil for none.
func secretsOf(sent http.Header, secret map[string]bool) http.Header {
	var h http.Header
	for name, values := range sent {
		if secret[name] {
			if h == nil {
				h = http.Header{}
			}
			h[name] = slices.Clone(values)
		}
	}
	return h
}
