package idem

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemkit/idem/keystore"
)

// beginDoubtRounds bounds how often Begin asks the keystore whether a
// failed create landed after all.
const beginDoubtRounds = 3

// settleCreateDoubt is Begin's answer to a failed create of rec. A failed
// write may still have landed (a commit whose acknowledgement was lost, a
// sync that failed after the write): the key was chosen before the write,
// so the keystore can tell. The record found under the key is the intent
// created; a record not found is created again (the same key, so still
// at most one); a keystore that cannot be asked gives an
// *UncertainIntentError with the key.
func (c *Client) settleCreateDoubt(ctx context.Context, rec *keystore.Record, createErr error) (*keystore.Record, bool, error) {
	if errors.Is(createErr, keystore.ErrDuplicateKey) || errors.Is(createErr, keystore.ErrClosed) ||
		errors.Is(createErr, keystore.ErrLocked) {
		return nil, false, fmt.Errorf("idem: persisting intent: %w", createErr)
	}
	lastErr := createErr
	for round := range beginDoubtRounds {
		if round > 0 && !sleepCtx(context.WithoutCancel(ctx), time.Duration(round)*100*time.Millisecond) {
			break
		}
		found, err := c.lookupWithin(ctx, rec.Key)
		switch {
		case err == nil:
			if found.Fingerprint != rec.Fingerprint {
				return nil, false, fmt.Errorf("idem: persisting intent: the keystore holds another intent under the new key: %w", keystore.ErrDuplicateKey)
			}
			c.log.WarnContext(ctx, "idem: a create reported failed had landed; the intent is kept", "key", keyHash(rec.Key), "err", createErr)
			return found, true, nil
		case errors.Is(err, keystore.ErrNotFound):
			if round == beginDoubtRounds-1 {
				// Asked last: the write did not land, and is not tried again.
				return nil, false, fmt.Errorf("idem: persisting intent (not stored): %w", lastErr)
			}
			existing, created, cerr := c.createRecordClaimed(ctx, rec)
			if cerr == nil {
				return existing, created, nil
			}
			if errors.Is(cerr, keystore.ErrDuplicateKey) || errors.Is(cerr, keystore.ErrClosed) {
				return nil, false, fmt.Errorf("idem: persisting intent: %w", cerr)
			}
			lastErr = cerr
		default:
			lastErr = err
		}
	}
	return nil, false, &UncertainIntentError{Key: rec.Key, Name: keystore.BusinessName(rec.Name, rec.Principal), Err: lastErr}
}

// lookupWithin reads key with a bounded wait, even when ctx has ended:
// the answer settles a doubt the caller must not be left with. It waits
// one write grace at most, and no longer than the call's keystore budget
// allows (storewait.go).
func (c *Client) lookupWithin(ctx context.Context, key string) (*keystore.Record, error) {
	return waitStore(c, ctx, "keystore lookup", c.cfg.writeGrace, func(lctx context.Context) (*keystore.Record, error) {
		return c.store.Get(lctx, key)
	})
}
