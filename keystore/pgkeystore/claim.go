package pgkeystore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idemkit/idem/keystore"
)

// Claim implements keystore.Claimer: it takes up to limit unclaimed unsettled
// (Pending or Accepted) records,
// oldest first, for owner until lease from now on the database clock.
// Damaged rows stay claimed (so they do not come back at once) and are
// named in a *CorruptRecordsError returned with the others.
func (p *Store) Claim(ctx context.Context, owner string, lease time.Duration, limit int) ([]*keystore.Record, error) {
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	if err := validatePostgresClaim(owner, lease); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("keystore: postgres: claim limit must be positive, got %d", limit)
	}
	rows, err := p.pool.Query(ctx, p.sql.claim, owner, lease.Microseconds(), limit)
	if err != nil {
		return nil, p.wrap("claim", err)
	}
	recs, damaged, _, err := collectPostgresRecords(rows)
	if err != nil {
		return nil, p.wrap("claim", err)
	}
	// UPDATE ... RETURNING comes back in no particular order.
	slices.SortFunc(recs, func(a, b *keystore.Record) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	p.log.Debug("keystore: postgres claimed", "owner", owner, "records", len(recs), "lease", lease)
	return recs, damaged.Err()
}

// ClaimKey implements keystore.Claimer: it claims the record with key for owner
// unless another owner's claim on it is live.
func (p *Store) ClaimKey(ctx context.Context, key, owner string, lease time.Duration) (bool, error) {
	if err := p.checkOpen(); err != nil {
		return false, err
	}
	if err := validatePostgresClaim(owner, lease); err != nil {
		return false, err
	}
	tag, err := p.pool.Exec(ctx, p.sql.claimKey, key, lease.Microseconds(), owner)
	if err != nil {
		return false, p.fail("claim", key, err)
	}
	if tag.RowsAffected() == 1 {
		p.log.Debug("keystore: postgres claimed key", "owner", owner, "key", keystore.KeyRef(key), "lease", lease)
		return true, nil
	}
	if err := p.mustExist(ctx, "claim", key); err != nil {
		return false, err
	}
	return false, nil
}

// Unclaim implements keystore.Claimer: it releases owner's claim on key, if owner
// holds one.
func (p *Store) Unclaim(ctx context.Context, key, owner string) error {
	if err := p.checkOpen(); err != nil {
		return err
	}
	if owner == "" {
		return errors.New("keystore: postgres: unclaim: empty owner")
	}
	tag, err := p.pool.Exec(ctx, p.sql.unclaim, key, owner)
	if err != nil {
		return p.fail("unclaim", key, err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return p.mustExist(ctx, "unclaim", key)
}

// mustExist returns ErrNotFound when no record has key.
func (p *Store) mustExist(ctx context.Context, op, key string) error {
	ok, err := p.exists(ctx, key)
	if err != nil {
		return p.fail(op, key, err)
	}
	if !ok {
		return fmt.Errorf("%w: %s", keystore.ErrNotFound, keystore.KeyRef(key))
	}
	return nil
}

// validatePostgresClaim rejects claims that could never be told apart or never
// last: an empty owner, or a lease shorter than the database's microsecond
// resolution.
func validatePostgresClaim(owner string, lease time.Duration) error {
	if owner == "" {
		return errors.New("keystore: postgres: claim: empty owner")
	}
	if postgresText(owner) != owner {
		return errors.New("keystore: postgres: claim: owner is not valid UTF-8 text (or contains NUL)")
	}
	if lease < time.Microsecond {
		return fmt.Errorf("keystore: postgres: claim: lease must be at least 1µs, got %v", lease)
	}
	return nil
}
