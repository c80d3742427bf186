package idem

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/idemkit/idem/keystore"
)

// Do settles the intent. What it does depends on the intent's state in the
// keystore (in is refreshed from it when Do returns):
//
//   - Succeeded or Failed: the stored answer is replayed locally, without
//     the network (IsReplay is true); a Failed intent also returns its
//     error again.
//   - Expired, or Pending but older than the retention (WithRetention):
//     nothing is sent; the error matches ErrKeyExpired.
//   - Accepted: the 202's operation is polled again; never resent.
//   - Pending: the request is sent with its key, retried as the policy
//     allows, and the answer stored.
//
// Answers are judged by the client's dialect, as the package docs' "What
// each answer means" lays out: a 2xx (or 303) returns the response with
// nil error and the intent Succeeded. A 422 /key-reused returns the
// response and an error matching ErrKeyReused; another final 4xx, 501 or
// 505 the response and ErrFinalFailure, and the intent is then Failed,
// unless an attempt may have taken effect: then the intent stays Pending
// and the error matches ErrOutcomeUnknown. Where resending cannot settle
// the intent, the Reconciler (WithReconciler) is asked.
//
// A 202 with Location makes the intent Accepted, and its operation is
// polled (GET, bounded by WithPolling and ctx); the original request is
// never sent again. What the operation answers decides:
//
//   - A 2xx whose document says succeeded, in a word the dialect
//     documents (or a JSON object with no status, the result itself): the
//     intent is Succeeded and the response is that document.
//   - A 2xx whose document says failed or canceled, in a documented word:
//     the intent is Failed with that document, ErrOperationFailed.
//   - A 202, or a 2xx whose status says pending ("pending", "processing",
//     ...): polled again; at the bound the intent stays Accepted and the
//     response is the 202, with a nil error.
//   - 404 or 410 within WithOperationGrace of the 202: taken for a server
//     that does not show the operation yet, and polled again. Later: the
//     operation is gone; the 202 proved the request was taken, so the
//     intent stays Accepted and the error matches ErrOperationGone and
//     ErrOutcomeUnknown.
//   - Another 4xx, except 401, 403 and 407 (credentials, which a process
//     resuming after a restart may lack) and the retryable 408, 425 and
//     429; or a 2xx document whose status the dialect does not document
//     ("expired", "on_hold", a number): no proof either way. Polling stops
//     for this call, the intent stays Accepted, and the error matches
//     ErrOperationUnknown and ErrOutcomeUnknown.
//   - For a gone or unproven operation the Reconciler, when there is
//     one, is asked; its verdict settles the intent.
//   - No answer about the operation (transport errors and 5xx after the
//     retries, 401, 403, 407, polling disabled, no usable Location):
//     polling stops for this call, the intent stays Accepted with
//     LastError set and the response is the 202, with a nil error.
//
// An accepted intent whose 202 is older than the retention (WithRetention)
// becomes Expired, with an error matching ErrKeyExpired, when the poll
// finds its operation gone or gets no answer: the server may have
// forgotten the operation with the key. An operation the server still
// reports pending, or final, is followed whatever its age.
//
// When Do gives up (attempts, budget, a wait beyond ctx's deadline, ctx
// itself) the intent stays Pending, resumable with the same key, and the
// error is a *GiveUpError; errors.Is(err, ErrOutcomeUnknown) when an
// attempt may have taken effect. The last response, if any, comes back
// with the error. Every response Do returns has its body in memory, so
// closing it is optional.
//
// Nothing is sent for an intent whose stored request no longer matches
// its fingerprint (a damaged keystore: the error matches
// keystore.ErrCorrupt), nor by an attempt whose credentials are missing or
// name another principal than the intent's (ErrCredentialsMissing,
// ErrCredentialsMismatch).
//
// Every keystore wait is bounded, with or without a deadline on ctx: each
// by the store timeout (WithStoreTimeout), and all those after ctx ended
// together by one write grace (WithWriteGrace). A keystore that does not
// answer in time ends Do with an error matching ErrStoreTimeout; the
// intent stays as the keystore last recorded it, resumable with its key.
//
// Concurrent Do calls on one intent send once: the later call waits and
// replays what the first stored (or sends, if the first left it Pending).
// Across processes sharing a keystore that implements keystore.Claimer
// (Postgres), Do first claims an unsettled intent for this Client, keeps
// the claim while it runs and releases it when it returns; an intent
// another live worker holds is not sent, and the error matches
// ErrIntentBusy.
func (c *Client) Do(ctx context.Context, in *Intent) (*http.Response, error) {
	if c != nil && c.tel != nil {
		return c.tel.do(ctx, c, in) // spans and metrics around do (telemetry.go)
	}
	return c.do(ctx, in)
}

// do is Do without its telemetry.
func (c *Client) do(ctx context.Context, in *Intent) (*http.Response, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	if in == nil || in.Key == "" {
		return nil, errors.New("idem: Do: nil intent or intent without key")
	}
	key := in.Key
	kl, err := c.locks.lock(ctx, key)
	if err != nil {
		return nil, &GiveUpError{Reason: err, Key: key}
	}
	defer c.locks.unlock(key, kl)
	ctx = c.withStoreBudget(ctx) // every keystore wait below is bounded (storewait.go)
	var loaded *keystore.Record
	var shared bool
	err = c.readStore(ctx, "loading the intent", func(rctx context.Context) (err error) {
		loaded, shared, err = c.load(rctx, key)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("idem: loading intent (key hash %s): %w", keyHash(in.Key), in.tx.notCommitted(err))
	}
	in.tx.register(c, key) // committed: BeginTx's secrets go to the Client now
	var rec *keystore.Record
	var release func()
	err = c.readStore(ctx, "claiming the intent", func(rctx context.Context) (err error) {
		rec, release, err = c.claimForSend(rctx, loaded)
		return err
	})
	if err != nil {
		in.refresh(rec)
		return nil, err
	}
	defer release()
	if claimer, ok := c.store.(keystore.Claimer); ok && !rec.State.Settled() {
		ctx = withHeldClaim(ctx, claimer, c.cfg.claims.owner)
	}
	// Settling assigns rec's fields; it never changes what they point to.
	// So a shared record is settled in a shallow copy and stays as it was
	// loaded; a record of its own is copied to keep that.
	var before *keystore.Record
	var begun *begunIntent
	if shared && rec == loaded {
		if in.begun != nil && rec == in.begun.rec {
			begun = in.begun
		}
		before = rec
		work := begun.workRecord()
		*work = *rec
		work.Reconciliations = slices.Clip(work.Reconciliations) // an append never writes into the shared array
		rec = work
	} else {
		kept := *rec
		before = &kept
	}
	c.tel.sawRecord(ctx, rec)
	resp, err := c.settle(ctx, rec, begun)
	if err == nil {
		in.refresh(rec)
		return resp, nil
	}
	var werr *storeWriteError // declared here: errors.As makes it escape
	if errors.As(err, &werr) && (errors.Is(err, keystore.ErrClaimLost) || errors.Is(err, keystore.ErrSettled)) {
		// Another worker took the intent over and settled it (or holds
		// it): its record is the truth, and its answer, if it has one,
		// is this call's too.
		if stored, gerr := c.lookupWithin(ctx, in.Key); gerr == nil {
			if _, byVerdict := settledByVerdict(stored); byVerdict {
				// A verdict settled it while this call was in flight
				// (a settle by force): what this call learnt is kept as
				// evidence, and said when it contradicts the verdict.
				stored, resp, err = c.lateAnswer(ctx, stored, rec, resp)
				in.refresh(stored)
				return resp, err
			}
			in.refresh(stored)
			if stored.State.Settled() {
				return c.settleRecord(ctx, stored)
			}
		}
		return resp, err
	}
	if errors.As(err, &werr) {
		// The record in memory went further than the keystore: show the
		// intent as it is stored (as it was, if the keystore cannot say).
		rec = before
		if stored, gerr := c.lookupWithin(ctx, in.Key); gerr == nil {
			rec = stored
		}
	}
	in.refresh(rec)
	return resp, err
}

// settleRecord does what Do documents for rec's state; rec is updated in
// place to what was stored.
func (c *Client) settleRecord(ctx context.Context, rec *keystore.Record) (*http.Response, error) {
	return c.settle(ctx, rec, nil)
}

// load reads the intent with key for Do: shared says the record may be
// the keystore's own (keystore.Sharer), which Do must not modify.
func (c *Client) load(ctx context.Context, key string) (rec *keystore.Record, shared bool, err error) {
	if s, ok := c.store.(keystore.Sharer); ok {
		rec, err = s.GetShared(ctx, key)
		return rec, true, err
	}
	rec, err = c.store.Get(ctx, key)
	return rec, false, err
}

// settle is settleRecord; a begun not nil says rec is the record Begin
// built, whose method, URL and body are those Begin fingerprinted, by
// construction (see checkIntegrity), so the integrity check before
// sending has nothing to find.
func (c *Client) settle(ctx context.Context, rec *keystore.Record, begun *begunIntent) (*http.Response, error) {
	if rec.State.Settled() {
		// Settled elsewhere (another worker, a verdict, an earlier
		// process) after this process kept its secrets: they are not
		// needed any more.
		c.forgetSecrets(rec.Key)
	}
	switch rec.State {
	case Succeeded:
		if err := conflictOf(rec); err != nil {
			return c.localReplay(rec), err
		}
		return c.localReplay(rec), nil
	case Failed:
		if err := conflictOf(rec); err != nil {
			return c.localReplay(rec), err
		}
		return c.localReplay(rec), c.failedError(rec)
	case Expired:
		return nil, &GiveUpError{Reason: ErrKeyExpired, Key: rec.Key}
	case Accepted:
		return c.poll(ctx, rec, false)
	case Pending:
	default:
		return nil, fmt.Errorf("idem: intent (key hash %s) has unknown state %q", keyHash(rec.Key), rec.State)
	}
	if age := c.cfg.now().Sub(rec.CreatedAt); age > c.cfg.retention {
		err := c.expire(ctx, rec, fmt.Sprintf("older than the key retention (%s); not resent", c.cfg.retention), 0)
		return c.reconcileOr(ctx, rec, nil, err)
	}
	return c.sendPending(ctx, rec, begun)
}

// reconcileOr runs the Reconciler, when there is one, on rec, which
// resending cannot settle; resp and err are what Do returns when the
// reconciler does not settle it (none configured, an error, or still
// unknown).
func (c *Client) reconcileOr(ctx context.Context, rec *keystore.Record, resp *http.Response, err error) (*http.Response, error) {
	if c.cfg.reconciler == nil {
		return resp, err
	}
	settled, rerr := c.runReconciler(ctx, rec)
	if rerr != nil {
		return resp, errors.Join(err, rerr)
	}
	if !settled {
		return resp, err
	}
	return c.settleRecord(ctx, rec)
}

// expire marks an unsettled intent Expired, why being the record's last
// error and lastStatus the last status seen (0 if none): the server may
// have forgotten its key, or its operation, so only a reconciliation by
// hand can tell what happened.
func (c *Client) expire(ctx context.Context, rec *keystore.Record, why string, lastStatus int) error {
	rec.State = Expired
	rec.UpdatedAt = c.cfg.now()
	rec.LastError = why
	ge := &GiveUpError{Reason: ErrKeyExpired, Key: rec.Key, LastStatus: lastStatus}
	c.forgetSecrets(rec.Key)
	c.log.WarnContext(ctx, "idem: intent expired; reconcile it", "key", keyHash(rec.Key))
	if err := c.write(ctx, c.updateFn, rec); err != nil {
		return errors.Join(ge, fmt.Errorf("idem: storing expiry: %w", err))
	}
	return ge
}

// localReplay rebuilds the stored answer of a settled intent.
func (c *Client) localReplay(rec *keystore.Record) *http.Response {
	if rec.Response == nil {
		return reconciledResponse(rec)
	}
	resp := storedResponse(rec.Response, recordRequest(rec), true)
	if !rec.Purged.IsZero() {
		// A tombstone keeps the answer's status and headers, not its body.
		resp.Header.Set(PurgedHeader, "true")
	}
	return resp
}

// PurgedHeader marks a local replay of an intent that a purge reduced to
// its tombstone (see keystore.PurgeRequest): the status and headers of its
// answer are the stored ones, the body is gone.
const PurgedHeader = "Idem-Purged"

// failedError is the error a Failed intent returns again on every Do.
func (c *Client) failedError(rec *keystore.Record) error {
	ge := &GiveUpError{Reason: ErrFinalFailure, Key: rec.Key}
	if rec.Response == nil {
		if rec.LastError != "" {
			ge.LastErr = errors.New(rec.LastError)
		}
		return ge
	}
	ge.LastStatus = rec.Response.Status
	switch {
	case rec.Operation != "" && operationGoneStatus(rec.Response.Status):
		// Only polling stores an answer after a 202 set the operation.
		ge.Reason = ErrOperationGone
	case rec.Operation != "" && rec.Response.Status >= 200 && rec.Response.Status <= 299:
		// A 2xx stored as a failure is an operation document saying so.
		ge.Reason = ErrOperationFailed
	case classify(&c.cfg.dialect, rec.Method, true, storedResponse(rec.Response, nil, false), nil) == outcomeKeyReused:
		ge.Reason = ErrKeyReused
	}
	return ge
}

// recordRequest is the request a stored response answers, without body
// or secrets, for resp.Request.
func recordRequest(rec *keystore.Record) *http.Request {
	req, err := http.NewRequest(rec.Method, rec.URL, nil)
	if err != nil {
		return nil
	}
	req.Header = rec.Header.Clone()
	if rec.Host != "" {
		req.Host = rec.Host
	}
	return req
}
