package idem

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/idemkit/idem/keystore"
)

// DefaultClaimLease is how long a Client's claim on an intent in a shared
// keystore (one implementing keystore.Claimer) lasts before another worker
// may take the intent over. Do renews the claim every third of the lease
// while it runs, so only a worker that stopped (crashed, or stalled longer
// than the lease) lets its intents go.
const DefaultClaimLease = 60 * time.Second

// claimConfig is how a Client claims intents in a shared keystore.
type claimConfig struct {
	// owner names this Client in claims: unique per Client, readable by an
	// operator (host, process, random suffix).
	owner string
	lease time.Duration
}

func defaultClaimConfig() claimConfig {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return claimConfig{
		owner: host + ":" + strconv.Itoa(os.Getpid()) + ":" + rand.Text()[:10],
		lease: DefaultClaimLease,
	}
}

// WithClaimLease sets how long a claim on an intent in a shared keystore
// lasts without renewal (default DefaultClaimLease). A shorter lease hands
// a crashed worker's intents to another worker sooner; it must comfortably
// exceed a pause of the process (GC, a stalled VM), or two workers may send
// one intent at the same time (the server still applies it once, since
// both send the same key). Stores that do not implement keystore.Claimer
// ignore it.
func WithClaimLease(d time.Duration) Option {
	return func(c *config) error {
		if d < time.Millisecond {
			return fmt.Errorf("idem: WithClaimLease(%s): need at least 1ms", d)
		}
		c.claims.lease = d
		return nil
	}
}

// ClaimOwner returns the name under which this Client claims intents in a
// shared keystore, as an operator sees it in the keystore.
func (c *Client) ClaimOwner() string { return c.cfg.claims.owner }

// ClaimPending is the worker loop's source of intents: it claims up to
// limit unsettled intents that no other live worker holds, oldest first,
// and returns them. Call Do on each; Do keeps the claim while it runs and
// releases it when it returns. An intent not passed to Do stays claimed
// until the lease runs out. An empty result means there is nothing to take
// now. When damaged records are among them, the sound intents come back
// together with an error matching keystore.ErrCorrupt that names the
// damaged ones.
//
// With a keystore that does not implement keystore.Claimer (bbolt, memory:
// one process owns them), it returns the first limit intents of Pending.
func (c *Client) ClaimPending(ctx context.Context, limit int) ([]*Intent, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, fmt.Errorf("idem: ClaimPending: limit must be positive, got %d", limit)
	}
	claimer, ok := c.store.(keystore.Claimer)
	if !ok {
		pending, err := c.Pending(ctx)
		if len(pending) > limit {
			pending = pending[:limit]
		}
		return pending, err
	}
	// Bounded like every keystore wait: claims an answer never reported
	// are held until their lease ends, then free again.
	var recs []*keystore.Record
	err := c.readStore(ctx, "claiming pending intents", func(rctx context.Context) (err error) {
		recs, err = claimer.Claim(rctx, c.cfg.claims.owner, c.cfg.claims.lease, limit)
		return err
	})
	var damaged *keystore.CorruptRecordsError
	if err != nil && !errors.As(err, &damaged) {
		return nil, fmt.Errorf("idem: claiming pending intents: %w", err)
	}
	out := make([]*Intent, len(recs))
	for i, r := range recs {
		out[i] = intentFromRecord(r)
	}
	if damaged != nil {
		// The sound intents are claimed and handed out; the damaged ones
		// are named, never sent.
		return out, fmt.Errorf("idem: claiming pending intents: %w", damaged)
	}
	return out, nil
}

// claimForSend makes this Client the only worker that sends rec while Do
// runs, when the keystore is shared. Only unsettled intents (Pending, or
// Accepted and still polled) are claimed; settled ones replay locally.
// It returns the record as it is once claimed (another worker may have
// settled it meanwhile) and the function that releases the claim. An
// intent another live worker holds is not sent: the error matches
// ErrIntentBusy and rec comes back unchanged.
func (c *Client) claimForSend(ctx context.Context, rec *keystore.Record) (*keystore.Record, func(), error) {
	claimer, ok := c.store.(keystore.Claimer)
	if !ok || (rec.State != Pending && rec.State != Accepted) {
		return rec, func() {}, nil
	}
	owner, lease := c.cfg.claims.owner, c.cfg.claims.lease
	got, err := claimer.ClaimKey(ctx, rec.Key, owner, lease)
	if err != nil {
		return rec, nil, fmt.Errorf("idem: claiming intent (key hash %s): %w", keyHash(rec.Key), err)
	}
	if !got {
		c.log.DebugContext(ctx, "idem: intent held by another worker; not sent", "key", keyHash(rec.Key))
		return rec, nil, &GiveUpError{Reason: ErrIntentBusy, Key: rec.Key}
	}
	release := c.holdClaim(ctx, claimer, rec.Key)
	fresh, err := c.store.Get(ctx, rec.Key)
	if err != nil {
		release()
		return rec, nil, fmt.Errorf("idem: reloading claimed intent (key hash %s): %w", keyHash(rec.Key), err)
	}
	return fresh, release, nil
}

// holdClaim renews the claim on key every third of the lease until the
// returned function is called, which stops the renewals and releases the
// claim.
func (c *Client) holdClaim(ctx context.Context, claimer keystore.Claimer, key string) func() {
	owner, lease := c.cfg.claims.owner, c.cfg.claims.lease
	stop := make(chan struct{})
	// Renewals end when the claim is released, even one stuck in the
	// store: releasing must never wait on them.
	renewCtx, stopRenewing := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		ticker := time.NewTicker(lease / 3)
		defer ticker.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ticker.C:
			}
			// Bounded by the lease: a renewal that takes longer is moot,
			// and a hung one must not hold up releasing the claim.
			rctx, cancel := context.WithTimeout(renewCtx, lease)
			held, err := claimer.ClaimKey(rctx, key, owner, lease)
			cancel()
			switch {
			case err != nil:
				c.log.WarnContext(ctx, "idem: renewing the claim failed; it runs out unless a later renewal succeeds",
					"key", keyHash(key), "err", err)
			case !held:
				// Another worker took the intent over after our lease ran
				// out: both send the same key, so the server applies it once.
				c.log.WarnContext(ctx, "idem: claim lost to another worker while sending", "key", keyHash(key))
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			stopRenewing()
			// Bounded like every write after the call (the write grace):
			// a claim that cannot be released simply runs out.
			unclaim := func(uctx context.Context, _ *keystore.Record) error { return claimer.Unclaim(uctx, key, owner) }
			if err := c.write(ctx, unclaim, nil); err != nil && !errors.Is(err, keystore.ErrClosed) {
				c.log.WarnContext(ctx, "idem: releasing the claim failed; it runs out with its lease",
					"key", keyHash(key), "err", err)
			}
		})
	}
}

// heldClaim is the claim a Do holds on its intent, carried in its context
// so every write it makes is fenced by it.
type heldClaim struct {
	claimer keystore.Claimer
	owner   string
}

type heldClaimKey struct{}

// withHeldClaim marks ctx as running under owner's claim.
func withHeldClaim(ctx context.Context, claimer keystore.Claimer, owner string) context.Context {
	return context.WithValue(ctx, heldClaimKey{}, heldClaim{claimer: claimer, owner: owner})
}

// update is how a call writes an unsettled record: a compare-and-set on
// the claim it holds (keystore.Claimer.UpdateClaimed), so a worker whose
// claim another worker took over can never overwrite that worker's
// result, or a plain Update without a claim.
func (c *Client) update(ctx context.Context, rec *keystore.Record) error {
	if h, ok := ctx.Value(heldClaimKey{}).(heldClaim); ok {
		return h.claimer.UpdateClaimed(ctx, rec, h.owner)
	}
	return c.store.Update(ctx, rec)
}

// createRecordClaimed creates rec, claimed for this Client in the same
// write when the keystore is shared, so no other worker's ClaimPending
// takes a fresh intent before its creator sends it.
func (c *Client) createRecordClaimed(ctx context.Context, rec *keystore.Record) (*keystore.Record, bool, error) {
	if claimer, ok := c.store.(keystore.Claimer); ok {
		return claimer.CreateClaimed(ctx, rec, c.cfg.claims.owner, c.cfg.claims.lease)
	}
	return c.createRecord(ctx, rec)
}
