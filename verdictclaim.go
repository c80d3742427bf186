package idem

import (
	"context"
	"fmt"
	"strings"

	"github.com/idemkit/idem/keystore"
)

// IntentBusyError is the error of Settle and Reconcile when the keystore
// is shared (keystore.Claimer) and another live worker holds the
// intent's claim: it may have an attempt in flight, whose answer a
// verdict recorded now would contradict. It matches ErrIntentBusy.
type IntentBusyError struct {
	// Key is the intent's idempotency key.
	Key string
	// Op is what was refused: "settle" or "reconcile".
	Op string
}

// Error says what to do: wait for the worker, or settle by force.
func (e *IntentBusyError) Error() string {
	force := "or settle it with Force (Settlement.Force, `idem intents settle --force`)"
	if e.Op == "reconcile" {
		force = "or settle it by hand with Force (Settlement.Force, `idem intents settle --force`)"
	}
	return fmt.Sprintf("idem: %s: another live worker holds the intent (key hash %s) and may have an attempt in flight; "+
		"wait for it to finish, or for its claim to run out (WithClaimLease), %s: "+
		"the worker's answer, when it comes, is then kept in the audit trail as conflicting evidence",
		e.Op, keyHash(e.Key), force)
}

// Unwrap returns ErrIntentBusy.
func (e *IntentBusyError) Unwrap() error { return ErrIntentBusy }

// claimForVerdict takes the claim on rec, when the keystore is shared and
// rec may be in a worker's hands (Pending, Accepted), before a verdict is
// recorded on it, as Do does before it sends: no worker then sends or
// polls the intent while the verdict is written, and the write is fenced
// by the claim. It returns the record as it is once claimed (a worker may
// have settled it meanwhile), ctx carrying the claim, and the function
// that releases it. Another live worker's claim is an *IntentBusyError,
// unless force: then nothing is claimed, the verdict is written over the
// worker's claim, and the worker keeps its late answer as evidence
// (lateAnswer).
func (c *Client) claimForVerdict(ctx context.Context, rec *keystore.Record, op string, force bool) (*keystore.Record, context.Context, func(), error) {
	claimer, ok := c.store.(keystore.Claimer)
	if !ok || (rec.State != Pending && rec.State != Accepted) {
		return rec, ctx, func() {}, nil
	}
	owner, lease := c.cfg.claims.owner, c.cfg.claims.lease
	got, err := claimer.ClaimKey(ctx, rec.Key, owner, lease)
	if err != nil {
		return nil, ctx, nil, fmt.Errorf("idem: claiming intent (key hash %s): %w", keyHash(rec.Key), err)
	}
	if !got {
		if !force {
			return nil, ctx, nil, &IntentBusyError{Key: rec.Key, Op: op}
		}
		c.log.WarnContext(ctx, "idem: verdict given by force on an intent another worker holds; its answer will be kept as evidence",
			"key", keyHash(rec.Key))
		return rec, ctx, func() {}, nil
	}
	release := c.holdClaim(ctx, claimer, rec.Key)
	fresh, err := c.store.Get(ctx, rec.Key)
	if err != nil {
		release()
		return nil, ctx, nil, fmt.Errorf("idem: reloading claimed intent (key hash %s): %w", keyHash(rec.Key), err)
	}
	return fresh, withHeldClaim(ctx, claimer, owner), release, nil
}

// verdictOpen reports whether a verdict may still be recorded on rec:
// it is unsettled (Pending, Accepted), Expired, or Failed only because
// its accepted operation was gone (goneByEarlierBuild), which proves
// nothing about the operation.
func verdictOpen(rec *keystore.Record) bool {
	switch rec.State {
	case Pending, Accepted, Expired:
		return true
	case Failed:
		return goneByEarlierBuild(rec)
	}
	return false
}

// legacyGoneText is how the error of an operation gone from the server
// read when earlier builds stored such an intent Failed.
const legacyGoneText = "the accepted operation is gone from the server"

// goneByEarlierBuild reports whether rec is an intent that an earlier
// build stored Failed because its accepted operation answered 404 or 410
// (ErrOperationGone): the 202 proved the server took it on, the 404
// proves nothing of what became of it, so the outcome is unknown and a
// verdict is still due. Its last error says so, or its stored answer is
// the poll's 404/410 after a 202; one settled by a verdict since is not.
func goneByEarlierBuild(rec *keystore.Record) bool {
	if rec.State != Failed {
		return false
	}
	if _, ok := settledByVerdict(rec); ok {
		return false
	}
	return rec.OperationGone() || strings.Contains(rec.LastError, legacyGoneText)
}

// settledByVerdict returns the verdict that settled rec, when one did: a
// reconciliation (by a Reconciler or a person) whose outcome is rec's
// state. Evidence recorded after it (the server's late answers) is passed
// over.
func settledByVerdict(rec *keystore.Record) (keystore.Reconciliation, bool) {
	if rec.State != Succeeded && rec.State != Failed {
		return keystore.Reconciliation{}, false
	}
	for i := len(rec.Reconciliations) - 1; i >= 0; i-- {
		v := rec.Reconciliations[i]
		if v.Source == sourceServer || v.Outcome == keystore.ReconciledUnknown {
			continue
		}
		return v, v.Outcome == string(rec.State)
	}
	return keystore.Reconciliation{}, false
}
