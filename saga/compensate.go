package saga

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

// Resolutions recorded for a step once nothing is left to undo.
const (
	resolvedCompensated = "compensated"
	resolvedNeverSent   = "nothing to undo: never sent"
	resolvedRefused     = "nothing to undo: the provider refused the step"
	resolvedNoUndo      = "nothing to undo: the step has no compensation"
)

// Fail compensates the run: it records the run as Compensating (with
// cause) before anything is undone, then undoes the steps that began, in
// reverse order, each recorded once it is undone, and records the run as
// Compensated. A step the provider refused has nothing to undo; a step
// whose outcome is unknown stops the compensation (*StepUnknownError)
// until it settles: it is resent first, with its key, in case the
// provider answers now. A compensation the provider refuses, or whose
// outcome can no longer be learnt, makes the run NeedsOperator
// (*NeedsOperatorError). Fail is idempotent: call it again (after a
// crash, after a step settled, after ResolveStep) and it goes on where it
// stopped, every compensation made at most once at the provider. A
// resumed program calls its steps again (they replay) before Fail, so
// their compensations are known (else ErrCompensationMissing).
//
// Fail is a decision to undo the run: call it for an error that means
// the operation cannot go on (a refusal, ErrFinalFailure), not for one
// that only means "later" (idem.ErrIntentBusy, idem.ErrStoreTimeout, a
// context's end): then return, and run the same code again later. A
// completed run is not compensated (*RunStateError).
func (r *Run) Fail(ctx context.Context, cause error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch r.state() {
	case Compensated:
		return nil
	case Completed:
		return &RunStateError{Run: r.ID(), State: Completed, Op: "fail"}
	case Running:
		d := r.data.clone()
		if cause != nil {
			d.Cause = cause.Error()
		}
		if err := r.write(ctx, Compensating, d); err != nil {
			return err
		}
	}
	for i := len(r.data.Steps) - 1; i >= 0; i-- {
		e := r.data.Steps[i]
		if e.Compensated {
			continue
		}
		resolution, err := r.undoStep(ctx, &e)
		var needs *NeedsOperatorError
		if errors.As(err, &needs) {
			d := r.data.clone()
			d.Problem = needs.Error()
			if werr := r.write(ctx, NeedsOperator, d); werr != nil {
				return errors.Join(err, werr)
			}
			return err
		}
		if err != nil {
			return err
		}
		d := r.data.clone()
		d.Steps[i].Compensated, d.Steps[i].Resolution = true, resolution
		d.Problem = ""
		if err := r.write(ctx, Compensating, d); err != nil {
			return err
		}
	}
	d := r.data.clone()
	d.Problem = ""
	return r.write(ctx, Compensated, d)
}

// undoStep undoes one step and says how, or why it cannot yet.
func (r *Run) undoStep(ctx context.Context, e *stepEntry) (string, error) {
	if e.Kind == kindLocal {
		if !e.Undo {
			return resolvedNoUndo, nil
		}
		fn := r.undo[e.Name].compensateLocal
		if fn == nil {
			return "", fmt.Errorf("%w: run %q step %q", ErrCompensationMissing, r.ID(), e.Name)
		}
		if err := fn(ctx, append([]byte(nil), e.Result...)); err != nil {
			return "", fmt.Errorf("saga: run %q: compensating local step %q: %w", r.ID(), e.Name, err)
		}
		return resolvedCompensated, nil
	}
	resp, resolution, err := r.settledStep(ctx, e)
	if err != nil || resolution != "" {
		return resolution, err
	}
	if !e.Undo {
		return resolvedNoUndo, nil
	}
	return r.compensate(ctx, e, resp)
}

// settledStep settles an HTTP step before it is undone: its answer when
// it succeeded, or a resolution when there is nothing to undo.
func (r *Run) settledStep(ctx context.Context, e *stepEntry) (*http.Response, string, error) {
	in, err := r.s.client.Resume(ctx, e.Key)
	if errors.Is(err, keystore.ErrNotFound) {
		return nil, resolvedNeverSent, nil // recorded, then the process died before Begin
	}
	if err != nil {
		return nil, "", err
	}
	switch in.State {
	case idem.Failed:
		return nil, resolvedRefused, nil
	case idem.Expired:
		return nil, "", &StepUnknownError{Run: r.ID(), Step: e.Name, Key: e.Key,
			Err: fmt.Errorf("its intent is expired, never resent: %w", idem.ErrKeyExpired)}
	}
	// Succeeded replays locally; Pending and Accepted are resent or
	// polled with their key, in case the provider answers now.
	resp, err := r.s.client.Do(ctx, in)
	switch {
	case err == nil && !in.State.Settled():
		return nil, "", r.stillRunning(e.Name, e.Key, false, in)
	case err == nil:
		return resp, "", nil
	case in.State == idem.Failed && errors.Is(err, idem.ErrFinalFailure):
		return nil, resolvedRefused, nil
	}
	return nil, "", r.stepError(e.Name, e.Key, false, err)
}

// compensate sends the compensation of a step that succeeded with resp.
func (r *Run) compensate(ctx context.Context, e *stepEntry, resp *http.Response) (string, error) {
	needsOperator := func(err error) error {
		return &NeedsOperatorError{Run: r.ID(), Step: e.Name, Key: e.CompensationKey, Err: err}
	}
	begun, err := r.s.client.Resume(ctx, e.CompensationKey)
	switch {
	case errors.Is(err, keystore.ErrNotFound):
		begun = nil
	case err != nil:
		return "", err
	case begun.State == idem.Succeeded:
		return resolvedCompensated, nil // made before a crash: nothing to send
	case begun.State == idem.Failed, begun.State == idem.Expired:
		return "", needsOperator(fmt.Errorf("the compensation's intent is %s: %s", begun.State, begun.LastError))
	}
	fn := r.undo[e.Name].compensate
	if fn == nil && begun != nil {
		// Begun by a process that died: its request is stored, and the
		// client may give its credentials back (WithRequestEditor).
		return r.sendCompensation(ctx, e, begun)
	}
	if fn == nil {
		return "", fmt.Errorf("%w: run %q step %q", ErrCompensationMissing, r.ID(), e.Name)
	}
	req, err := fn(resp)
	if err != nil {
		return "", fmt.Errorf("saga: run %q: building the compensation of step %q: %w", r.ID(), e.Name, err)
	}
	if req == nil {
		return "", fmt.Errorf("%w: run %q: the compensation of step %q built a nil request", ErrInvalid, r.ID(), e.Name)
	}
	in, err := r.s.client.Begin(ctx, intentName(r.rec.ID, e.Name, true), req, idem.WithIntentKey(e.CompensationKey))
	if errors.Is(err, idem.ErrIntentConflict) {
		return "", &StepConflictError{Run: r.ID(), Step: e.Name, Reason: "its compensation built another request than the one begun before", Err: err}
	}
	if err != nil {
		return "", err
	}
	return r.sendCompensation(ctx, e, in)
}

// sendCompensation sends (or replays, or polls) a step's compensation
// intent and says what its outcome means for the run.
func (r *Run) sendCompensation(ctx context.Context, e *stepEntry, in *idem.Intent) (string, error) {
	needsOperator := func(err error) error {
		return &NeedsOperatorError{Run: r.ID(), Step: e.Name, Key: e.CompensationKey, Err: err}
	}
	_, err := r.s.client.Do(ctx, in)
	switch {
	case err == nil && !in.State.Settled():
		return "", r.stillRunning(e.Name, e.CompensationKey, true, in)
	case err == nil:
		return resolvedCompensated, nil
	case errors.Is(err, idem.ErrKeyExpired), errors.Is(err, idem.ErrKeyReused), errors.Is(err, idem.ErrFinalFailure):
		return "", needsOperator(err)
	case errors.Is(err, idem.ErrOutcomeUnknown):
		return "", &StepUnknownError{Run: r.ID(), Step: e.Name, Compensation: true, Key: e.CompensationKey, Err: err}
	}
	return "", err
}

// Resolution is a person's verdict on a step the run cannot undo by
// itself, for ResolveStep.
type Resolution struct {
	// By names who decided (a user, a ticket); Note says what was done
	// (refunded by hand, nothing to undo) and on what evidence.
	By, Note string
}

// ResolveStep records that a person has undone the step (or found
// nothing to undo) in a run that is Compensating or NeedsOperator: the
// step counts as compensated, with who and why kept in the run's record,
// and the run is Compensating again; Fail then goes on with the steps
// before it. Nothing is sent.
func (s *Saga) ResolveStep(ctx context.Context, runID, step string, res Resolution) error {
	if strings.TrimSpace(res.By) == "" || strings.TrimSpace(res.Note) == "" {
		return fmt.Errorf("%w: ResolveStep: By and Note are required: the record says who decided and why", ErrInvalid)
	}
	r, err := s.Resume(ctx, runID)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.state(); st != Compensating && st != NeedsOperator {
		return &RunStateError{Run: runID, State: st, Op: "resolve"}
	}
	d := r.data.clone()
	e := d.step(step)
	if e == nil {
		return fmt.Errorf("%w: run %q has no step %q", ErrInvalid, runID, step)
	}
	if e.Compensated {
		return fmt.Errorf("%w: run %q step %q is resolved already (%s)", ErrInvalid, runID, step, e.Resolution)
	}
	e.Compensated = true
	e.Resolution = fmt.Sprintf("resolved by %s: %s", res.By, res.Note)
	d.Problem = ""
	return r.write(ctx, Compensating, d)
}
