package keystore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// errNilRecord and errNoKey reject input no store can hold; both stores
// return the same errors so callers see one behaviour.
var (
	errNilRecord = errors.New("keystore: record is nil")
	errNoKey     = errors.New("keystore: record has no key")
)

// checkWrite validates a record given to Create or Update and the context
// it comes with, before anything is stored.
func checkWrite(ctx context.Context, op string, r *Record) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r == nil {
		return fmt.Errorf("%s: %w", op, errNilRecord)
	}
	if r.Key == "" {
		return fmt.Errorf("%s: %w", op, errNoKey)
	}
	return nil
}

// nameChanged is the error of an Update that tries to rename the record
// with key. A name is bound to its intent for life: the name index would
// otherwise have to move, and another record could already hold the new
// name.
func nameChanged(key, stored, given string) error {
	return fmt.Errorf("keystore: update %s: name is immutable (stored %q, given %q)", keyRef(key), stored, given)
}

// mayRewrite reports whether a record stored in state from may be
// rewritten in state to: a settled answer is never changed back, an
// Expired record may only be reconciled to Succeeded or Failed, and
// rewriting a settled record in its own state (a retried write, a
// verdict added to its audit trail) is allowed.
func mayRewrite(from, to State) bool {
	switch from {
	case Succeeded, Failed:
		return to == from
	case Expired:
		return to == Expired || to == Succeeded || to == Failed
	}
	return true
}

// OperationGone reports whether r is a Failed record whose stored answer
// is its accepted operation's 404 or 410: earlier builds stored an
// operation gone from the server so. The 202 proved the server took the
// intent on and the 404 proves nothing of what became of it, so its
// outcome is unknown: such a record may still be settled Succeeded (by a
// verdict, or the operation's own final answer), which every Store allows
// as the one way out of Failed, and a purge keeps it like an Expired one.
func (r *Record) OperationGone() bool {
	return r.State == Failed && r.Operation != "" && r.Response != nil &&
		(r.Response.Status == 404 || r.Response.Status == 410)
}

// mayRewriteGone reports whether a refusal of mayRewrite from Failed to
// Succeeded must look at the stored record: its answer may say its
// operation was gone (Record.OperationGone).
func mayRewriteGone(from, to State) bool { return from == Failed && to == Succeeded }

// settled is the error of an Update that mayRewrite refuses.
func settled(key string, from, to State) error {
	return fmt.Errorf("update %s: %w (stored %s, given %s)", keyRef(key), ErrSettled, from, to)
}

// matches reports whether r passes every non-zero field of f.
func (f Filter) matches(r *Record) bool {
	if !f.CreatedBefore.IsZero() && !r.CreatedAt.Before(f.CreatedBefore) {
		return false
	}
	return len(f.States) == 0 || slices.Contains(f.States, r.State)
}

// sortOldestFirst orders records by creation time, then by key so that
// records created in the same instant keep a stable order.
func sortOldestFirst(recs []*Record) {
	slices.SortFunc(recs, func(a, b *Record) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
}
