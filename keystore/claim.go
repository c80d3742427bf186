package keystore

import (
	"context"
	"time"
)

// Claimer is offered by stores that several processes share (Postgres), so
// that workers resuming pending intents never send one intent at the same
// time. A claim is a lease held by an owner (a worker id, unique per
// process) until a deadline on the store's clock; a worker that dies simply
// lets its claims run out and another worker takes them over.
//
// Claims fence writes through UpdateClaimed: a worker writes its outcome
// only while the claim is still its own, so a worker that outlived its
// lease, after another took the intent over, cannot overwrite what the
// new owner stored (it gets ErrClaimLost and should read the record
// again). Both send the same idempotency key, so the server applies the
// intent once either way. CreateClaimed claims a new intent in the write
// that creates it, so no other worker takes it before its creator sends
// it. Plain Update is not checked against claims.
//
// Use it through a type assertion:
//
//	if c, ok := store.(keystore.Claimer); ok { ... }
type Claimer interface {
	// Claim takes up to limit unsettled records (Pending, or Accepted and
	// still polled) that no live claim holds,
	// oldest first, claims them for owner until lease from now, and returns
	// them as they are after the claim. Two owners never get the same
	// record while its claim is live. An empty result means there is
	// nothing to take right now. Damaged records are left out and named
	// in a *CorruptRecordsError returned with the others, as List does.
	Claim(ctx context.Context, owner string, lease time.Duration, limit int) ([]*Record, error)
	// ClaimKey claims the record with key for owner until lease from now,
	// whatever its state. It reports false, writing nothing, when another
	// owner holds a live claim; claiming a record owner already holds
	// renews the lease. ErrNotFound if there is no such record. After a
	// successful claim, read the record again: the previous owner may have
	// finished it.
	ClaimKey(ctx context.Context, key, owner string, lease time.Duration) (bool, error)
	// Unclaim releases owner's claim on key, once the intent is final or
	// the worker gives it up. Releasing a claim owner does not hold (never
	// held, already released, or taken over after it expired) changes
	// nothing and is not an error. ErrNotFound if there is no such record.
	Unclaim(ctx context.Context, key, owner string) error
	// CreateClaimed is Create that also claims a record it creates for
	// owner until lease from now, in the same write, so no other worker
	// can take a new intent before its creator sends it. An existing
	// record (same name) is returned unclaimed, as Create does.
	CreateClaimed(ctx context.Context, r *Record, owner string, lease time.Duration) (existing *Record, created bool, err error)
	// UpdateClaimed is Update made by the holder of a claim: it writes
	// only while the record's claim is owner's (live, or lapsed with no
	// other owner since), and fails with ErrClaimLost otherwise. Like
	// Update it never changes a settled record back (ErrSettled).
	UpdateClaimed(ctx context.Context, r *Record, owner string) error
}
