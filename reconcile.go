package idem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/idemkit/idem/keystore"
)

// Outcome is what a reconciliation found out about an intent's effect.
type Outcome int

const (
	// OutcomeUnknown: asked, and still not known. The intent stays as it
	// was.
	OutcomeUnknown Outcome = iota
	// OutcomeSucceeded: the effect happened (the provider has the payment).
	OutcomeSucceeded
	// OutcomeFailed: the effect did not happen and will not (the provider
	// has no such payment, or it failed).
	OutcomeFailed
)

// String names the outcome as the keystore records it.
func (o Outcome) String() string {
	switch o {
	case OutcomeSucceeded:
		return keystore.ReconciledSucceeded
	case OutcomeFailed:
		return keystore.ReconciledFailed
	default:
		return keystore.ReconciledUnknown
	}
}

// Reconciliation is a verdict on an intent's outcome reached without the
// server's answer to the request itself: by asking the provider about it
// (by its key, or by a reference of the caller's own), or by a person.
type Reconciliation struct {
	// Outcome is what was found.
	Outcome Outcome
	// Evidence says how it was found (the provider's object id, a search
	// that came back empty); it is kept with the intent. Required for a
	// Succeeded or Failed outcome.
	Evidence string
	// Response, when set, is the provider's document that proves the
	// outcome (the payment object, fetched by its reference). Its body is
	// read and stored as the intent's answer, so later calls to Do replay
	// it. Optional.
	Response *http.Response
}

// A Reconciler asks the provider what became of an intent whose outcome
// the client cannot learn by resending it: one whose attempts may have
// taken effect and whose last answer proves nothing (a 401 after a lost
// answer, a replayed 500), or one older than the key retention. It must
// not send the intent's request again. An error, or OutcomeUnknown, leaves
// the intent as it was.
type Reconciler func(ctx context.Context, in *Intent) (Reconciliation, error)

// WithReconciler sets the function Do runs where resending cannot settle
// an intent (see Client.Do), and Client.Reconcile runs on demand. Default:
// none; such intents stay unsettled, listed by Pending (or Expired), for a
// reconciliation by hand (Client.Settle, `idem intents settle`).
func WithReconciler(r Reconciler) Option {
	return func(c *config) error {
		c.reconciler = r
		return nil
	}
}

// Reconciler sources recorded in the audit trail.
const (
	sourceReconciler = "reconciler"
	sourceManual     = "manual"
)

// maxReconciliations bounds an intent's audit trail; the oldest entries
// beyond it are dropped, the decisive last one always kept.
const maxReconciliations = 20

// ErrNotReconcilable: Reconcile or Settle was asked about an intent that is
// already settled by the server's own answer, or that has no reconciler
// to run.
var ErrNotReconcilable = errors.New("idem: intent cannot be reconciled")

// Reconcile runs the client's Reconciler on an intent whose outcome is
// not settled (Pending, Accepted, Expired, or Failed by an earlier build
// only because its operation was gone, ErrOperationGone) and records its
// verdict: Succeeded or Failed settle the intent (with the reconciler's
// response as its answer, when it gave one), Unknown is recorded in the
// audit trail and changes nothing else. It returns the intent's answer as
// Do would afterwards. Without a Reconciler, or on a settled intent, the
// error matches ErrNotReconcilable. In a shared keystore it claims the
// intent first, as Do does: while another live worker holds it the error
// is an *IntentBusyError (ErrIntentBusy) and nothing is recorded.
func (c *Client) Reconcile(ctx context.Context, in *Intent) (*http.Response, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	if in == nil || in.Key == "" {
		return nil, errors.New("idem: Reconcile: nil intent or intent without key")
	}
	if c.cfg.reconciler == nil {
		return nil, fmt.Errorf("%w: no Reconciler configured (WithReconciler)", ErrNotReconcilable)
	}
	kl, err := c.locks.lock(ctx, in.Key)
	if err != nil {
		return nil, &GiveUpError{Reason: err, Key: in.Key}
	}
	defer c.locks.unlock(in.Key, kl)
	ctx = c.withStoreBudget(ctx)
	rec, err := c.getStored(ctx, in.Key)
	if err != nil {
		return nil, fmt.Errorf("idem: loading intent (key hash %s): %w", keyHash(in.Key), err)
	}
	defer func() { in.refresh(rec) }()
	if !verdictOpen(rec) {
		return nil, fmt.Errorf("%w: it is %s", ErrNotReconcilable, rec.State)
	}
	claimed, ctx, release, err := c.claimForVerdict(ctx, rec, "reconcile", false)
	if err != nil {
		return nil, err
	}
	defer release()
	if rec = claimed; !verdictOpen(rec) {
		return nil, fmt.Errorf("%w: it is %s", ErrNotReconcilable, rec.State)
	}
	settled, err := c.runReconciler(ctx, rec)
	if err != nil {
		return nil, err
	}
	if !settled {
		return nil, &GiveUpError{Reason: ErrOutcomeUnknown, Key: rec.Key, OutcomeUnknown: true,
			LastErr: errors.New("reconciler: outcome still unknown")}
	}
	return c.settleRecord(ctx, rec)
}

// runReconciler asks the reconciler about rec and records its verdict;
// settled reports whether rec is now Succeeded or Failed.
func (c *Client) runReconciler(ctx context.Context, rec *keystore.Record) (settled bool, err error) {
	v, rerr := c.cfg.reconciler(ctx, intentFromRecord(rec))
	defer func() { c.tel.reconciled(ctx, v.Outcome, err) }()
	if rerr != nil {
		return false, fmt.Errorf("idem: reconciler (key hash %s): %w", keyHash(rec.Key), rerr)
	}
	var answer *keystore.Response
	if v.Response != nil {
		if v.Response.Body == nil {
			v.Response.Body = http.NoBody // a document with no body: an empty one, as net/http reads it
		}
		stored, truncated, cerr := capture(v.Response)
		v.Response.Body.Close()
		if cerr != nil || truncated {
			return false, fmt.Errorf("idem: reconciler (key hash %s): reading its response: %v", keyHash(rec.Key), cerr)
		}
		answer = stored
	}
	if err := c.recordVerdict(ctx, rec, v.Outcome, sourceReconciler, sourceReconciler, v.Evidence, answer); err != nil {
		return false, err
	}
	return v.Outcome != OutcomeUnknown, nil
}

// Settlement is a verdict on an intent's outcome reached by a person, for
// Client.Settle.
type Settlement struct {
	// Outcome is OutcomeSucceeded or OutcomeFailed.
	Outcome Outcome
	// By names who decided (a user name, a ticket).
	By string
	// Note says why: the evidence the person relied on.
	Note string
	// Status is the HTTP status of the provider's answer the person
	// found (the 201 of a create, in the provider's logs), for a
	// succeeded verdict only: a 2xx other than 202. A later Do replays it,
	// marked with SettlementHeader. 0 when not known: the replay is then a
	// 200 that SettlementHeader says idem made up (reconciledResponse).
	Status int
	// Force records the verdict even while another live worker of a
	// shared keystore holds the intent (which Settle otherwise refuses
	// with ErrIntentBusy): that worker may have an attempt in flight, and
	// its answer, when it comes, is kept in the audit trail as evidence;
	// one that contradicts the verdict makes its Do, and every later Do,
	// fail with ErrVerdictConflict.
	Force bool
}

// Settle records a verdict reached by hand on an intent whose outcome is
// not settled (Pending, Accepted, Expired, or Failed by an earlier build
// only because its operation was gone, ErrOperationGone): the intent
// becomes Succeeded or Failed, with who, when and why kept in its audit
// trail (Intent.Reconciliations). It sends nothing. A settled intent is
// refused (ErrNotReconcilable): the server's own answer stands. In a
// shared keystore Settle claims the intent first, as Do does, so no
// worker sends it while the verdict is written; while another live
// worker holds it the error is an *IntentBusyError (ErrIntentBusy),
// unless s.Force.
func (c *Client) Settle(ctx context.Context, key string, s Settlement) (*Intent, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	if s.Outcome != OutcomeSucceeded && s.Outcome != OutcomeFailed {
		return nil, errors.New("idem: Settle: the outcome must be OutcomeSucceeded or OutcomeFailed")
	}
	if strings.TrimSpace(s.By) == "" || strings.TrimSpace(s.Note) == "" {
		return nil, errors.New("idem: Settle: By and Note are required: the audit trail says who decided and why")
	}
	if _, err := settlementAnswer(s); err != nil {
		return nil, err
	}
	kl, err := c.locks.lock(ctx, key)
	if err != nil {
		return nil, err
	}
	defer c.locks.unlock(key, kl)
	ctx = c.withStoreBudget(ctx)
	rec, err := c.getStored(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("idem: loading intent (key hash %s): %w", keyHash(key), err)
	}
	if !verdictOpen(rec) {
		return nil, fmt.Errorf("%w: it is %s", ErrNotReconcilable, rec.State)
	}
	rec, ctx, release, err := c.claimForVerdict(ctx, rec, "settle", s.Force)
	if err != nil {
		return nil, err
	}
	defer release()
	if !verdictOpen(rec) {
		return nil, fmt.Errorf("%w: it is %s", ErrNotReconcilable, rec.State)
	}
	answer, err := settlementAnswer(s)
	if err != nil {
		return nil, err
	}
	if err := c.recordVerdict(ctx, rec, s.Outcome, sourceManual, s.By, s.Note, answer); err != nil {
		return nil, err
	}
	return intentFromRecord(rec), nil
}

// recordVerdict appends a verdict to rec's audit trail and, for a decisive
// outcome, settles rec with answer (nil when there is none) and stores it.
func (c *Client) recordVerdict(ctx context.Context, rec *keystore.Record, o Outcome, source, by, note string, answer *keystore.Response) error {
	if o != OutcomeUnknown && strings.TrimSpace(note) == "" {
		return fmt.Errorf("idem: reconciler (key hash %s): a %s verdict needs its evidence", keyHash(rec.Key), o)
	}
	now := c.cfg.now()
	entry := keystore.Reconciliation{Outcome: o.String(), Source: source, By: by, At: now, Note: note}
	next := rec.Clone()
	next.Reconciliations = appendTrail(next.Reconciliations, entry)
	next.UpdatedAt = now
	switch o {
	case OutcomeSucceeded:
		next.State = Succeeded
		next.LastError = ""
	case OutcomeFailed:
		next.State = Failed
		next.LastError = fmt.Sprintf("reconciled as failed by %s: %s", by, note)
	}
	if o != OutcomeUnknown {
		next.Response = answer
	}
	if err := c.write(ctx, c.updateFn, next); err != nil {
		return fmt.Errorf("idem: storing the reconciliation (key hash %s): %w", keyHash(rec.Key), err)
	}
	*rec = *next
	if o != OutcomeUnknown {
		c.forgetSecrets(rec.Key)
	}
	return nil
}

// SettlementHeader marks an answer idem made up for an intent settled as
// succeeded by a reconciliation that gave no response of the provider's:
// its value is the reconciliation's source ("reconciler" or "manual").
// Its status is the one the person gave (Settlement.Status), or 200 when
// none was: never the provider's own answer.
const SettlementHeader = "Idem-Settlement"

// settlementAnswer is the answer a Settlement with a Status stores: that
// status, marked with SettlementHeader, and a JSON account of the verdict
// (none for 204 and 205, which have no body); nil without a Status. It
// fails for a Status that no succeeded outcome answers with.
func settlementAnswer(s Settlement) (*keystore.Response, error) {
	if s.Status == 0 {
		return nil, nil
	}
	if s.Outcome != OutcomeSucceeded || s.Status < 200 || s.Status > 299 || s.Status == http.StatusAccepted {
		return nil, fmt.Errorf("idem: Settle: Status %d: give the 2xx (not 202) the provider answered a succeeded intent with, or 0 when it is not known", s.Status)
	}
	answer := &keystore.Response{Status: s.Status, Header: http.Header{SettlementHeader: {sourceManual}}}
	if s.Status == http.StatusNoContent || s.Status == http.StatusResetContent {
		return answer, nil
	}
	body, err := json.Marshal(map[string]any{"idem_settlement": map[string]any{
		"outcome": s.Outcome.String(), "source": sourceManual, "by": s.By, "note": s.Note, "status": s.Status,
	}})
	if err != nil {
		return nil, err
	}
	answer.Header.Set("Content-Type", "application/json")
	answer.Body = body
	return answer, nil
}

// reconciledResponse is what Do answers for an intent a reconciliation
// settled as succeeded without a response (nor a Settlement.Status): 200,
// a status no provider gave, with a JSON account of the verdict, marked with SettlementHeader and as a local replay, so a
// caller never gets a nil response with a nil error. Nil for anything
// else.
func reconciledResponse(rec *keystore.Record) *http.Response {
	last, ok := settledByVerdict(rec)
	if rec.State != Succeeded || !ok {
		return nil
	}
	body, err := json.Marshal(map[string]any{"idem_settlement": last})
	if err != nil {
		return nil
	}
	resp := storedResponse(&keystore.Response{
		Status: http.StatusOK,
		Header: http.Header{"Content-Type": {"application/json"}, SettlementHeader: {last.Source}},
		Body:   body,
	}, recordRequest(rec), true)
	return resp
}
