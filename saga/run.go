package saga

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

// Run is one run of a saga, as its decision record says. Drive it from
// one goroutine; its methods serialise anyway.
type Run struct {
	s  *Saga
	id string // the caller's id; rec.ID is it qualified by the scope
	mu sync.Mutex
	// rec is the run as last stored; data is rec.Data decoded.
	rec  *keystore.Run
	data runData
	// undo holds the compensations this process was given, by step.
	undo map[string]stepConfig
}

func newRun(s *Saga, id string, rec *keystore.Run, d runData) *Run {
	return &Run{s: s, id: id, rec: rec, data: d, undo: make(map[string]stepConfig)}
}

// ID is the run's id, as given to Saga.Run.
func (r *Run) ID() string { return r.id }

// State is the run's state as this process last read or wrote it.
func (r *Run) State() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state()
}

func (r *Run) state() State { return State(r.rec.State) }

// StepOption configures one step.
type StepOption func(*stepConfig) error

// stepConfig is what a step was told.
type stepConfig struct {
	compensate      func(resp *http.Response) (*http.Request, error)
	compensateLocal func(ctx context.Context, result []byte) error
}

// Compensate gives an HTTP step its compensation: fn builds, from the
// step's answer, the request that undoes it (a refund of the charge).
// Fail sends it as an intent of its own, under a derived key, at most
// once at the provider. fn is called by Fail, in the process that fails
// the run; it must build the same request every time. resp is the
// step's answer as Client.Do replays it: the provider's, or, for a step
// a reconciliation settled without one, idem's account of the verdict
// (marked with idem.SettlementHeader), from which fn builds what it can
// or returns an error.
func Compensate(fn func(resp *http.Response) (*http.Request, error)) StepOption {
	return func(c *stepConfig) error {
		if fn == nil {
			return fmt.Errorf("%w: Compensate: nil function", ErrInvalid)
		}
		c.compensate = fn
		return nil
	}
}

// CompensateLocal gives a local step its compensation: fn undoes the
// step from its stored result. Fail records that it ran once it
// returns nil; a crash between the two runs it again, so fn must be safe
// to run twice (a transaction keyed by the run id).
func CompensateLocal(fn func(ctx context.Context, result []byte) error) StepOption {
	return func(c *stepConfig) error {
		if fn == nil {
			return fmt.Errorf("%w: CompensateLocal: nil function", ErrInvalid)
		}
		c.compensateLocal = fn
		return nil
	}
}

func stepOptions(opts []StepOption) (stepConfig, error) {
	var c stepConfig
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// Step runs the HTTP step name: req becomes an intent under the key
// derived from the run and name (DeriveStepKey), recorded in the run
// before it is sent. A step that settled before replays its answer from
// the keystore without sending; one begun before and not settled is sent
// again with its key. It returns what idem.Client.Do returns, except:
//
//   - a step whose outcome is unknown: a *StepUnknownError (it matches
//     idem.ErrOutcomeUnknown too);
//   - a request that changed under the same name: a *StepConflictError;
//   - a new step on a run past Running: a *RunStateError, nothing sent.
//
// A final refusal (idem.ErrFinalFailure) comes back as it is: the step
// had no effect, and the program decides (usually Fail).
func (r *Run) Step(ctx context.Context, name string, req *http.Request, opts ...StepOption) (*http.Response, error) {
	if err := checkID("step name", name); err != nil {
		return nil, err
	}
	cfg, err := stepOptions(opts)
	if err != nil {
		return nil, err
	}
	if cfg.compensateLocal != nil {
		return nil, fmt.Errorf("%w: step %q: CompensateLocal is for local steps; use Compensate", ErrInvalid, name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	key := r.s.stepKey(r.ID(), name, false)
	e := r.data.step(name)
	if e != nil {
		if err := r.sameStep(e, kindHTTP, key, cfg); err != nil {
			return nil, err
		}
		if r.state() != Running {
			// Began: but did its intent come to be? A record without
			// one never sent anything, and cannot begin now.
			_, err := r.s.client.Resume(ctx, key)
			if errors.Is(err, keystore.ErrNotFound) {
				return nil, &RunStateError{Run: r.ID(), State: r.state(), Op: "step", Step: name}
			}
			if err != nil {
				return nil, err
			}
		}
	} else {
		if r.state() != Running {
			return nil, &RunStateError{Run: r.ID(), State: r.state(), Op: "step", Step: name}
		}
		d := r.data.clone()
		d.Steps = append(d.Steps, stepEntry{Name: name, Kind: kindHTTP, Key: key,
			CompensationKey: r.s.stepKey(r.ID(), name, true), Undo: cfg.compensate != nil})
		if err := r.write(ctx, Running, d); err != nil {
			return nil, err
		}
	}
	r.undo[name] = cfg
	in, err := r.s.client.Begin(ctx, intentName(r.rec.ID, name, false), req, idem.WithIntentKey(key))
	if errors.Is(err, idem.ErrIntentConflict) {
		return nil, &StepConflictError{Run: r.ID(), Step: name, Reason: "the request differs from the one the step began with", Err: err}
	}
	if err != nil {
		return nil, err
	}
	resp, err := r.s.client.Do(ctx, in)
	if err == nil && !in.State.Settled() {
		return resp, r.stillRunning(name, key, false, in)
	}
	return resp, r.stepError(name, key, false, err)
}

// stillRunning is the error of a step (or compensation) the provider
// accepted (202) whose operation has not been seen final: not passed,
// not undone, until a later call polls it to its outcome.
func (r *Run) stillRunning(name, key string, compensation bool, in *idem.Intent) error {
	return &StepUnknownError{Run: r.ID(), Step: name, Compensation: compensation, Key: key,
		Err: fmt.Errorf("its intent is %s: the provider's operation has not been seen final yet", in.State)}
}

// sameStep refuses a step called again under name with another kind,
// another key (another scope or secret) or another compensation.
func (r *Run) sameStep(e *stepEntry, kind, key string, cfg stepConfig) error {
	conflict := func(reason string) error { return &StepConflictError{Run: r.ID(), Step: e.Name, Reason: reason} }
	switch {
	case e.Kind != kind:
		return conflict(fmt.Sprintf("it began as a %s step", e.Kind))
	case e.Key != key:
		return conflict("its key was derived under another scope or key secret")
	case e.Undo != (cfg.compensate != nil || cfg.compensateLocal != nil):
		return conflict("it began with a compensation and is called without one, or the other way round")
	}
	return nil
}

// stepError turns what Do said about a step (or a compensation) into the
// saga's errors: unknown, conflict, or as it is.
func (r *Run) stepError(name, key string, compensation bool, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, idem.ErrKeyReused):
		return &StepConflictError{Run: r.ID(), Step: name, Reason: "the provider holds its key for another request", Err: err}
	case errors.Is(err, idem.ErrOutcomeUnknown), errors.Is(err, idem.ErrKeyExpired):
		return &StepUnknownError{Run: r.ID(), Step: name, Compensation: compensation, Key: key, Err: err}
	}
	return err
}

// MaxLocalResult is the largest result a local step may store.
const MaxLocalResult = 1 << 20

// Local runs the local step name: fn's result is stored in the run's
// record and replayed by every later call, fn not run again. fn runs
// again only when no result was stored (an error, or a crash before the
// write), so it must be safe to run twice. Once the run is past
// Running, a local step without a stored result is refused
// (*RunStateError).
func (r *Run) Local(ctx context.Context, name string, fn func(ctx context.Context) ([]byte, error), opts ...StepOption) ([]byte, error) {
	if err := checkID("step name", name); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, fmt.Errorf("%w: Local: nil function", ErrInvalid)
	}
	cfg, err := stepOptions(opts)
	if err != nil {
		return nil, err
	}
	if cfg.compensate != nil {
		return nil, fmt.Errorf("%w: step %q: Compensate is for HTTP steps; use CompensateLocal", ErrInvalid, name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.data.step(name); e != nil {
		if err := r.sameStep(e, kindLocal, "", cfg); err != nil {
			return nil, err
		}
		r.undo[name] = cfg
		return append([]byte(nil), e.Result...), nil
	}
	if r.state() != Running {
		return nil, &RunStateError{Run: r.ID(), State: r.state(), Op: "step", Step: name}
	}
	out, err := fn(ctx)
	if err != nil {
		return nil, err
	}
	if len(out) > MaxLocalResult {
		return nil, fmt.Errorf("%w: step %q: the result is %d bytes, over MaxLocalResult (%d)", ErrInvalid, name, len(out), MaxLocalResult)
	}
	d := r.data.clone()
	d.Steps = append(d.Steps, stepEntry{Name: name, Kind: kindLocal, Undo: cfg.compensateLocal != nil, Result: append([]byte(nil), out...)})
	if err := r.write(ctx, Running, d); err != nil {
		return nil, err
	}
	r.undo[name] = cfg
	return out, nil
}

// LocalJSON is Local for a function whose result is a value: it is
// stored as JSON and decoded into out on every call, the first too.
func (r *Run) LocalJSON(ctx context.Context, name string, out any, fn func(ctx context.Context) (any, error), opts ...StepOption) error {
	if fn == nil {
		return fmt.Errorf("%w: LocalJSON: nil function", ErrInvalid)
	}
	raw, err := r.Local(ctx, name, func(ctx context.Context) ([]byte, error) {
		v, err := fn(ctx)
		if err != nil {
			return nil, err
		}
		return json.Marshal(v)
	}, opts...)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("saga: step %q: decoding its stored result: %w", name, err)
	}
	return nil
}

// Complete records the run as Completed. Every HTTP step that began must
// be settled (Succeeded, or Failed: a refusal the program chose to
// accept); one that is not is a *StepUnknownError and nothing is
// written. A completed run stays completed: a second Complete does
// nothing, a Fail is refused.
func (r *Run) Complete(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch r.state() {
	case Completed:
		return nil
	case Running:
	default:
		return &RunStateError{Run: r.ID(), State: r.state(), Op: "complete"}
	}
	for _, e := range r.data.Steps {
		if e.Kind != kindHTTP {
			continue
		}
		in, err := r.s.client.Resume(ctx, e.Key)
		if errors.Is(err, keystore.ErrNotFound) {
			continue // recorded, never begun: nothing was sent
		}
		if err != nil {
			return err
		}
		if in.State != idem.Succeeded && in.State != idem.Failed {
			// Pending, Accepted, or Expired: nothing proves what it did.
			return &StepUnknownError{Run: r.ID(), Step: e.Name, Key: e.Key, Err: fmt.Errorf("its intent is %s", in.State)}
		}
	}
	return r.write(ctx, Completed, r.data.clone())
}

// write stores d with state as the run's next version and, once it is
// stored, makes it the run's.
func (r *Run) write(ctx context.Context, state State, d runData) error {
	data, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("saga: encoding run %q: %w", r.ID(), err)
	}
	next := &keystore.Run{ID: r.rec.ID, Version: r.rec.Version + 1, State: string(state), Data: data,
		CreatedAt: r.rec.CreatedAt, UpdatedAt: r.s.now().UTC()}
	if err := r.s.runs.PutRun(ctx, next); err != nil {
		if errors.Is(err, keystore.ErrRunVersion) {
			return fmt.Errorf("%w: run %q: %v", ErrRunChanged, r.ID(), err)
		}
		return fmt.Errorf("saga: storing run %q: %w", r.ID(), err)
	}
	r.rec, r.data = next, d
	return nil
}
