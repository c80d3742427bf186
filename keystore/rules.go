package keystore

import "context"

// CheckWrite makes the checks every Store makes on a record given to
// Create or Update, and on the context it comes with, before anything is
// stored: a live context, a record, a key. A Store of another package
// (one registered with RegisterOpener) calls it first, so all stores
// refuse the same input with the same errors.
func CheckWrite(ctx context.Context, op string, r *Record) error {
	return checkWrite(ctx, op, r)
}

// MayRewrite reports whether a Store may rewrite a record stored in
// state from as a record in state to: a settled answer (Succeeded,
// Failed) is never changed back, an Expired record may only be
// reconciled to Succeeded or Failed, and rewriting a settled record in
// its own state (a retried write, a verdict added to its audit trail) is
// allowed. An Update it refuses fails with ErrSettled.
func MayRewrite(from, to State) bool { return mayRewrite(from, to) }
