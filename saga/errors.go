package saga

import (
	"errors"
	"fmt"
)

// Sentinel errors. Match them with errors.Is; the typed errors below wrap
// them with the run and step.
var (
	// ErrRunNotFound: Resume, Show or ResolveStep named a run the
	// keystore does not hold.
	ErrRunNotFound = errors.New("saga: no such run")
	// ErrRunNotRunning: the run is past Running (completed, or
	// compensating), so a step that never began cannot begin, and a
	// completed run cannot be compensated. A *RunStateError.
	ErrRunNotRunning = errors.New("saga: the run is no longer running")
	// ErrStepConflict: a step's request (or kind, or compensation)
	// changed under the same name, in the keystore or at the provider
	// (422 key reused). A correction is another step name or another run.
	// A *StepConflictError.
	ErrStepConflict = errors.New("saga: the step changed under the same name")
	// ErrStepUnknown: a step's (or a compensation's) outcome is unknown;
	// the run neither passes it nor compensates it until it settles. A
	// *StepUnknownError.
	ErrStepUnknown = errors.New("saga: a step's outcome is unknown; settle it before the run goes on")
	// ErrNeedsOperator: a compensation cannot be proven (refused by the
	// provider, or its outcome can no longer be learnt); the run is
	// NeedsOperator until a person records a verdict (ResolveStep). A
	// *NeedsOperatorError.
	ErrNeedsOperator = errors.New("saga: a compensation cannot be proven; the run needs an operator")
	// ErrRunChanged: another writer changed the run's record since this
	// process read it (two processes driving one run). Nothing was
	// written; Resume the run again.
	ErrRunChanged = errors.New("saga: the run was changed by another writer; resume it again")
	// ErrCompensationMissing: Fail must compensate a step whose
	// compensation function this process was not given: a resumed
	// program calls its steps again (they replay) before Fail, so each
	// one's compensation is known.
	ErrCompensationMissing = errors.New("saga: a step's compensation is not known to this process; call the step again before Fail")
	// ErrInvalid: an argument cannot be used (an empty or malformed run
	// id or step name, a nil function, an oversized local result).
	ErrInvalid = errors.New("saga: invalid argument")
	// ErrNoRunKeeper: the client's keystore cannot keep runs (it does not
	// implement keystore.RunKeeper).
	ErrNoRunKeeper = errors.New("saga: the keystore cannot keep runs (keystore.RunKeeper)")
)

// RunStateError: an operation the run's state does not allow.
type RunStateError struct {
	// Run is the run's id; State its state; Op what was refused
	// ("step", "complete", "fail").
	Run   string
	State State
	Op    string
	// Step names the step that was refused, "" for none.
	Step string
}

// Error says what was refused and why.
func (e *RunStateError) Error() string {
	if e.Step != "" {
		return fmt.Sprintf("saga: run %q is %s: step %q never began, so it cannot begin now", e.Run, e.State, e.Step)
	}
	return fmt.Sprintf("saga: run %q is %s: %s refused", e.Run, e.State, e.Op)
}

// Unwrap returns ErrRunNotRunning.
func (e *RunStateError) Unwrap() error { return ErrRunNotRunning }

// StepConflictError: a step changed under its name.
type StepConflictError struct {
	// Run and Step name the step.
	Run, Step string
	// Reason says what changed.
	Reason string
	// Err is the underlying error (idem.ErrIntentConflict,
	// idem.ErrKeyReused), nil when the run's record alone showed it.
	Err error
}

// Error says what changed and what to do.
func (e *StepConflictError) Error() string {
	msg := fmt.Sprintf("saga: run %q step %q: %s; a changed request is another step (another name) or another run, never a new call under the same name", e.Run, e.Step, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrStepConflict and Err.
func (e *StepConflictError) Unwrap() []error { return joinErrs(ErrStepConflict, e.Err) }

// StepUnknownError: a step, or its compensation, whose outcome is
// unknown. The run waits for it: resend it (call the step again, or
// Fail again, once the provider answers), let a Reconciler settle it
// (idem.Client.Reconcile), or settle it by hand (`idem intents settle`
// with Key).
type StepUnknownError struct {
	// Run and Step name the step.
	Run, Step string
	// Compensation is set when it is the step's compensation whose
	// outcome is unknown.
	Compensation bool
	// Key is the intent's idempotency key.
	Key string
	// Err is why (an error matching idem.ErrOutcomeUnknown, or the
	// intent's unsettled state).
	Err error
}

// Error names the step and what to do.
func (e *StepUnknownError) Error() string {
	what := "step"
	if e.Compensation {
		what = "compensation of step"
	}
	msg := fmt.Sprintf("saga: run %q: the outcome of the %s %q is unknown; the run waits until it settles (a resend, a reconciler, or `idem intents settle`)", e.Run, what, e.Step)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrStepUnknown and Err.
func (e *StepUnknownError) Unwrap() []error { return joinErrs(ErrStepUnknown, e.Err) }

// NeedsOperatorError: a compensation that cannot be proven; the run is
// NeedsOperator.
type NeedsOperatorError struct {
	// Run and Step name the step whose compensation failed.
	Run, Step string
	// Key is the compensation's idempotency key.
	Key string
	// Err is what the provider or the keystore said.
	Err error
}

// Error names the step and what to do.
func (e *NeedsOperatorError) Error() string {
	msg := fmt.Sprintf("saga: run %q needs an operator: the compensation of step %q cannot be proven; undo it by hand and record it with ResolveStep, then Fail the run again", e.Run, e.Step)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrNeedsOperator and Err.
func (e *NeedsOperatorError) Unwrap() []error { return joinErrs(ErrNeedsOperator, e.Err) }

// joinErrs is the non-nil ones of errs.
func joinErrs(errs ...error) []error {
	out := errs[:0:0]
	for _, err := range errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}
