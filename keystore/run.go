package keystore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Run is the decision record of one saga run (package saga), kept in the
// same keystore as the intents of its steps so that one file, or one
// database, holds everything a resume needs. The store keeps Data as
// opaque bytes; State is the run's state as its writer names it, stored
// beside Data so that a listing need not decode it.
type Run struct {
	// ID names the run; the writer chooses and validates it.
	ID string `json:"id"`
	// Version counts the run's writes: 1 for the first, one more for each
	// later one. PutRun uses it as a compare-and-set.
	Version uint64 `json:"version"`
	// State is the writer's name for the run's state.
	State string `json:"state"`
	// Data is the writer's record of the run.
	Data []byte `json:"data"`
	// CreatedAt is when version 1 was written; UpdatedAt the last write.
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Clone returns a deep copy.
func (r *Run) Clone() *Run {
	if r == nil {
		return nil
	}
	c := *r
	c.Data = slices.Clone(r.Data)
	return &c
}

// ErrRunVersion: PutRun was given a run whose Version does not follow the
// stored one (another writer wrote the run since it was read, or version
// 1 of a run that exists). Nothing was written; read the run again.
var ErrRunVersion = errors.New("keystore: the run was written by another writer since it was read")

// RunKeeper is offered by stores that keep saga runs beside the intents
// (Bolt, Memory). Every write is durable on return, like Create.
//
// Use it through a type assertion:
//
//	rk, ok := store.(keystore.RunKeeper)
type RunKeeper interface {
	// PutRun stores r when the stored run with r.ID has Version
	// r.Version-1, or when none is stored and r.Version is 1; the check
	// and the write are one atomic step. Otherwise it fails with
	// ErrRunVersion and writes nothing.
	PutRun(ctx context.Context, r *Run) error
	// GetRun returns the run with this id, or ErrNotFound; a damaged one
	// is ErrCorrupt.
	GetRun(ctx context.Context, id string) (*Run, error)
	// ListRuns returns every run, oldest first. Damaged runs are left out
	// and named in a *CorruptRecordsError returned with the others.
	ListRuns(ctx context.Context) ([]*Run, error)
}

// CheckRun refuses a run no store may write (nil, no id, version 0), and
// a done ctx: every RunKeeper checks a run with it before writing it.
func CheckRun(ctx context.Context, r *Run) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	switch {
	case r == nil:
		return errors.New("keystore: put run: nil run")
	case r.ID == "":
		return errors.New("keystore: put run: empty id")
	case r.Version == 0:
		return errors.New("keystore: put run: version 0 (the first write is version 1)")
	}
	return nil
}

// runVersionError says which version was expected and which is stored
// (0 for none).
func runVersionError(id string, stored, given uint64) error {
	return fmt.Errorf("%w: run %q is at version %d, the write was version %d", ErrRunVersion, id, stored, given)
}

// sortRunsOldestFirst orders runs by creation, then id.
func sortRunsOldestFirst(runs []*Run) {
	slices.SortFunc(runs, func(a, b *Run) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
}
