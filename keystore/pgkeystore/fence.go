package pgkeystore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/keystore"
)

// CreateClaimed implements keystore.Claimer: Create, with the new record claimed
// for owner until lease from now on the database clock in the same
// INSERT, so Claim by another worker cannot take it before its creator
// sends it.
func (p *Store) CreateClaimed(ctx context.Context, r *keystore.Record, owner string, lease time.Duration) (*keystore.Record, bool, error) {
	if err := p.checkWrite(ctx, "create", r); err != nil {
		return nil, false, err
	}
	if err := validatePostgresClaim(owner, lease); err != nil {
		return nil, false, err
	}
	args := append(postgresRecordArgs(r), owner, lease.Microseconds())
	return p.create(ctx, p.pool, r, p.sql.insertClaimed, args)
}

// UpdateClaimed implements keystore.Claimer: Update, made only while claim_owner
// is owner, checked by the UPDATE itself. A claim that lapsed keeps its
// owner until another worker claims the record, so a slow worker still
// writes if nobody took over; a released claim (claim_owner NULL) fences
// like a taken one.
func (p *Store) UpdateClaimed(ctx context.Context, r *keystore.Record, owner string) error {
	if err := p.checkWrite(ctx, "update", r); err != nil {
		return err
	}
	if owner == "" {
		return errors.New("keystore: postgres: update claimed: empty owner")
	}
	return p.update(ctx, r, owner)
}

// update runs the UPDATE of Update, or of UpdateClaimed when owner is
// set, and turns a refusal into its error.
func (p *Store) update(ctx context.Context, r *keystore.Record, owner string) error {
	stmt, args := p.sql.update, postgresRecordArgs(r)
	if owner != "" {
		stmt, args = p.sql.updateClaimed, append(args, owner)
	}
	for range 3 {
		tag, err := p.pool.Exec(ctx, stmt, args...)
		if err != nil {
			return p.fail("update", r.Key, err)
		}
		if tag.RowsAffected() == 1 {
			return nil
		}
		if err := p.refusal(ctx, r, owner); err != nil {
			return err
		}
		// Nothing refuses the write now, so the record did not exist yet
		// when the UPDATE ran; it does now: write it.
	}
	return fmt.Errorf("keystore: postgres: update %s: the record kept changing under concurrent writers; try again", keystore.KeyRef(r.Key))
}

// refusal finds out why the UPDATE of r wrote nothing. The checks the
// UPDATE made stay failed once they failed (a name is immutable, a
// settled record never goes back, a claim taken by another owner is
// lost), so reading the row afterwards names the failed one; nil means
// none fails now.
func (p *Store) refusal(ctx context.Context, r *keystore.Record, owner string) error {
	var name, claimOwner *string
	var state string
	err := p.pool.QueryRow(ctx, p.sql.guard, r.Key).Scan(&name, &state, &claimOwner)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("update: %w: %s", keystore.ErrNotFound, keystore.KeyRef(r.Key))
	}
	if err != nil {
		return p.fail("update", r.Key, err)
	}
	stored := ""
	if name != nil {
		stored = *name
	}
	switch {
	case stored != r.Name:
		return nameChanged(r.Key, stored, r.Name)
	case owner != "" && (claimOwner == nil || *claimOwner != owner):
		return fmt.Errorf("update %s: %w", keystore.KeyRef(r.Key), keystore.ErrClaimLost)
	case !keystore.MayRewrite(keystore.State(state), r.State):
		return settled(r.Key, keystore.State(state), r.State)
	case owner != "":
		// The claim is owner's again (renewed after another owner's
		// lapsed), but it was not when the UPDATE ran: that write was
		// based on what owner read before, so it stays refused.
		return fmt.Errorf("update %s: %w (the claim was another owner's in between)", keystore.KeyRef(r.Key), keystore.ErrClaimLost)
	}
	return nil
}
