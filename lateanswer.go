package idem

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/idemkit/idem/keystore"
)

// sourceServer marks an audit-trail entry that records the server's
// answer to an attempt in flight when a verdict settled the intent: it is
// evidence, never a verdict.
const sourceServer = "server"

// lateNoteBody bounds how much of a late answer's body its audit-trail
// entry quotes.
const lateNoteBody = 512

// VerdictConflictError is the error of Do when the server's answer to an
// attempt contradicts a verdict recorded on the intent while the attempt
// was in flight (a settle by force), and of every later Do on that
// intent: the answer is kept in the audit trail as conflicting evidence,
// the verdict stays. It matches ErrVerdictConflict, and neither
// ErrFinalFailure nor success: the effect may have happened whatever the
// verdict says.
type VerdictConflictError struct {
	// Key is the intent's idempotency key.
	Key string
	// State is the state the verdict recorded (Succeeded or Failed).
	State State
	// Verdict is the reconciliation that settled the intent.
	Verdict keystore.Reconciliation
	// Evidence is the audit-trail entry that keeps the server's answer.
	Evidence keystore.Reconciliation
	// Status is the server's answer's status, 0 if it gave none.
	Status int
	// Response is the server's answer, body in memory, for the Do whose
	// attempt got it; nil on later calls (the audit trail keeps it).
	Response *http.Response
}

// Error says what conflicts and what to do.
func (e *VerdictConflictError) Error() string {
	by := e.Verdict.Source
	if e.Verdict.By != "" && e.Verdict.By != e.Verdict.Source {
		by += ", by " + e.Verdict.By
	}
	return fmt.Sprintf("idem: the server answered %d for the intent (key hash %s) after it was settled as %s (%s); "+
		"the answer conflicts with that verdict and is kept in the audit trail: the effect may have happened, "+
		"so never pay again on this; have a person weigh the evidence (idem intents show)",
		e.Status, keyHash(e.Key), e.State, by)
}

// Unwrap returns ErrVerdictConflict.
func (e *VerdictConflictError) Unwrap() error { return ErrVerdictConflict }

// lateAnswer records what a worker learnt (late, the record it could not
// write; resp, the answer it got) about an intent that a verdict settled
// while it was in flight (stored), as evidence in the audit trail: never
// dropped, never over the verdict. An answer that contradicts the
// verdict is a *VerdictConflictError with the answer; one that agrees
// with it, or proves nothing, returns what Do returns for stored.
func (c *Client) lateAnswer(ctx context.Context, stored, late *keystore.Record, resp *http.Response) (*keystore.Record, *http.Response, error) {
	verdict, _ := settledByVerdict(stored)
	outcome := lateOutcome(stored, late)
	entry := keystore.Reconciliation{
		Outcome: outcome, Source: sourceServer, By: c.cfg.claims.owner, At: c.cfg.now(),
		Note: lateNote(stored, late, verdict),
	}
	next := stored.Clone()
	next.Reconciliations = appendTrail(next.Reconciliations, entry)
	next.UpdatedAt = entry.At
	// A plain Update: the claim, if this worker still has it, fences
	// unsettled records only, and the record keeps its state.
	update := func(wctx context.Context, r *keystore.Record) error { return c.store.Update(wctx, r) }
	werr := c.write(ctx, update, next)
	if werr != nil {
		c.log.ErrorContext(ctx, "idem: keeping a late answer as evidence failed", "key", keyHash(stored.Key), "err", werr)
		next = stored
	}
	c.log.WarnContext(ctx, "idem: answer arrived after a verdict settled the intent; kept as evidence",
		"key", keyHash(stored.Key), "outcome", outcome)
	if outcome != keystore.ReconciledConflict {
		out, err := c.settleRecord(ctx, next)
		return next, out, errors.Join(err, wrapWrite(werr))
	}
	conflict := &VerdictConflictError{Key: stored.Key, State: stored.State, Verdict: verdict, Evidence: entry, Response: resp}
	if late.Response != nil {
		conflict.Status = late.Response.Status
	}
	if resp == nil && late.Response != nil {
		resp = storedResponse(late.Response, recordRequest(late), false)
		conflict.Response = resp
	}
	return next, resp, errors.Join(conflict, wrapWrite(werr))
}

// wrapWrite describes a failed write of a late answer, nil for none.
func wrapWrite(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("idem: keeping the late answer in the audit trail: %w", err)
}

// lateOutcome is what a late answer says against the verdict on stored:
// ReconciledConflict when it contradicts it (a success, or a 202 the
// verdict did not know of, against Failed; a final refusal against
// Succeeded), the verdict's own outcome when it agrees, and
// ReconciledUnknown when it proves nothing (a give-up, a 202 the verdict
// already knew of).
func lateOutcome(stored, late *keystore.Record) string {
	var says string
	switch late.State {
	case Succeeded:
		says = keystore.ReconciledSucceeded
	case Accepted:
		if late.Operation != "" && late.Operation == stored.Operation {
			return keystore.ReconciledUnknown // the 202 was there before the verdict
		}
		says = keystore.ReconciledSucceeded // the server took it on
	case Failed:
		says = keystore.ReconciledFailed
	default:
		return keystore.ReconciledUnknown
	}
	if says == string(stored.State) {
		return says
	}
	return keystore.ReconciledConflict
}

// lateNote is the audit-trail note of a late answer: "status N: " first
// (lateStatus reads it back), then what it came after, and the answer's
// Location and the start of its body.
func lateNote(stored, late *keystore.Record, verdict keystore.Reconciliation) string {
	var b strings.Builder
	if late.Response != nil {
		fmt.Fprintf(&b, "status %d: ", late.Response.Status)
	} else {
		b.WriteString("no final answer: ")
	}
	fmt.Fprintf(&b, "answer to an attempt in flight when the intent was settled as %s (%s", stored.State, verdict.Source)
	if verdict.By != "" && verdict.By != verdict.Source {
		b.WriteString(", by " + verdict.By)
	}
	b.WriteString(")")
	if late.Response == nil {
		if late.LastError != "" {
			b.WriteString("; " + late.LastError)
		}
		return b.String()
	}
	if loc := late.Response.Header.Get("Location"); loc != "" {
		b.WriteString("; Location: " + loc)
	}
	if body := late.Response.Body; len(body) > 0 {
		cut := body
		if len(cut) > lateNoteBody {
			cut = cut[:lateNoteBody]
			for len(cut) > 0 && !utf8.Valid(cut) {
				cut = cut[:len(cut)-1]
			}
		}
		b.WriteString("; body: " + strings.Join(strings.Fields(string(cut)), " "))
		if len(cut) < len(body) {
			b.WriteString(" …")
		}
	}
	return b.String()
}

// lateStatus reads the status back from a late answer's note, 0 if none.
func lateStatus(note string) int {
	var status int
	if _, err := fmt.Sscanf(note, "status %d:", &status); err != nil {
		return 0
	}
	return status
}

// conflictOf is the *VerdictConflictError of a record settled by a
// verdict whose audit trail holds a conflicting answer recorded after
// it, nil for any other record.
func conflictOf(rec *keystore.Record) error {
	if len(rec.Reconciliations) < 2 {
		return nil
	}
	verdict, ok := settledByVerdict(rec)
	if !ok {
		return nil
	}
	for i := len(rec.Reconciliations) - 1; i >= 0; i-- {
		v := rec.Reconciliations[i]
		if v.Source != sourceServer {
			return nil // a verdict after the evidence, or the one it contradicts
		}
		if v.Outcome == keystore.ReconciledConflict {
			return &VerdictConflictError{Key: rec.Key, State: rec.State, Verdict: verdict, Evidence: v, Status: lateStatus(v.Note)}
		}
	}
	return nil
}

// appendTrail appends entry to trail, dropping the oldest entries beyond
// maxReconciliations.
func appendTrail(trail []keystore.Reconciliation, entry keystore.Reconciliation) []keystore.Reconciliation {
	trail = append(trail, entry)
	if len(trail) > maxReconciliations {
		trail = trail[len(trail)-maxReconciliations:]
	}
	return trail
}
