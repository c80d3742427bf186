package saga

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

// RunInfo is what a run's decision record says, for reports (List,
// Show).
type RunInfo struct {
	// ID is the run's id as given to Saga.Run; Scope the scope it is
	// stored under (WithScope), "" for none.
	ID, Scope string
	State     State
	Version   uint64
	// Cause is what Fail was given; Problem why the run needs an
	// operator.
	Cause, Problem       string
	CreatedAt, UpdatedAt time.Time
	Steps                []StepInfo
}

// StepInfo is one step of a run, in the order the steps began.
type StepInfo struct {
	// Name and Kind ("http" or "local") of the step.
	Name, Kind string
	// Key and CompensationKey are an HTTP step's derived keys.
	Key, CompensationKey string
	// HasCompensation says the step was given one.
	HasCompensation bool
	// Compensated is set once nothing is left to undo; Resolution says
	// how.
	Compensated bool
	Resolution  string
	// IntentState and CompensationState are the states of the step's
	// intents in the keystore (Show only), "" when there is none.
	IntentState, CompensationState idem.State
}

func runInfo(scope, id string, rec *keystore.Run, d runData) RunInfo {
	info := RunInfo{ID: id, Scope: scope, State: State(rec.State), Version: rec.Version, Cause: d.Cause, Problem: d.Problem,
		CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt}
	for _, e := range d.Steps {
		info.Steps = append(info.Steps, StepInfo{Name: e.Name, Kind: e.Kind, Key: e.Key, CompensationKey: e.CompensationKey,
			HasCompensation: e.Undo, Compensated: e.Compensated, Resolution: e.Resolution})
	}
	return info
}

// List returns the runs of the Saga's scope (WithScope) the keystore
// holds, oldest first, without the states of their intents. Damaged runs are left out and named in an
// error matching keystore.ErrCorrupt, returned with the others.
func (s *Saga) List(ctx context.Context) ([]RunInfo, error) {
	return s.list(ctx, false)
}

// ListAll is List for the runs of every scope, each with its Scope: a
// tool that inspects a keystore (`idem runs list`) sees them all,
// whatever scope it was opened with.
func (s *Saga) ListAll(ctx context.Context) ([]RunInfo, error) {
	return s.list(ctx, true)
}

func (s *Saga) list(ctx context.Context, everyScope bool) ([]RunInfo, error) {
	recs, listErr := s.runs.ListRuns(ctx)
	if listErr != nil && !errors.Is(listErr, keystore.ErrCorrupt) {
		return nil, fmt.Errorf("saga: listing runs: %w", listErr)
	}
	var bad []error
	out := make([]RunInfo, 0, len(recs))
	for _, rec := range recs {
		scope, id := splitRunID(rec.ID)
		if !everyScope {
			var ours bool
			if id, ours = callerRunID(s.scope, rec.ID); !ours {
				continue // another scope's
			}
			scope = s.scope
		}
		d, err := decodeRun(rec)
		if err != nil {
			bad = append(bad, err)
			continue
		}
		out = append(out, runInfo(scope, id, rec, d))
	}
	if listErr != nil || bad != nil {
		return out, fmt.Errorf("saga: listing runs: %w", errors.Join(append([]error{listErr}, bad...)...))
	}
	return out, nil
}

// Show returns the run with this id and the states of its steps'
// intents; ErrRunNotFound when there is none.
func (s *Saga) Show(ctx context.Context, id string) (RunInfo, error) {
	r, err := s.Resume(ctx, id)
	if err != nil {
		return RunInfo{}, err
	}
	info := runInfo(s.scope, id, r.rec, r.data)
	for i := range info.Steps {
		st := &info.Steps[i]
		if st.Kind != kindHTTP {
			continue
		}
		if st.IntentState, err = s.intentState(ctx, st.Key); err != nil {
			return info, err
		}
		if st.CompensationState, err = s.intentState(ctx, st.CompensationKey); err != nil {
			return info, err
		}
	}
	return info, nil
}

// intentState is the state of the intent with key, "" when none.
func (s *Saga) intentState(ctx context.Context, key string) (idem.State, error) {
	in, err := s.client.Resume(ctx, key)
	if errors.Is(err, keystore.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return in.State, nil
}
