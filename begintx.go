package idem

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"

	"github.com/idemkit/idem/keystore"
)

// ErrTxUnsupported: BeginTx was called on a Client whose keystore cannot
// write in a caller's transaction (it does not implement
// keystore.TxCreator: bbolt, memory). Nothing was written. Open the
// Postgres keystore (keystore/pgkeystore) on the database the
// transaction is begun on.
var ErrTxUnsupported = errors.New("idem: the keystore cannot create intents in a caller's transaction")

// BeginTx is Begin whose intent is written inside tx, a database
// transaction the caller owns, so the intent commits, or rolls back, with
// the caller's own rows. An API handler writes its order and the intent
// of the provider call in one commit; after the commit it calls Do on the
// intent (never inside the transaction: tx is not held across the call);
// if tx rolls back, no intent exists. A handler that dies between the
// commit and Do leaves a Pending intent that a fleet's ClaimPending takes
// up once the claim BeginTx took for this Client has run out
// (WithClaimLease), as for any intent a crashed worker left.
//
// tx is the keystore's own kind of transaction, passed as an opaque value
// so this package imports no database driver: with keystore/pgkeystore a
// pgx.Tx on the keystore's database. A value the keystore cannot write in
// (another type, another database) is an error matching
// keystore.ErrForeignTx; a keystore that writes in no transaction of the
// caller's is ErrTxUnsupported. After any error, roll tx back: a failed
// statement leaves a Postgres transaction unusable.
//
// Everything else is Begin's: the name and payload rules
// (ErrIntentConflict), WithIntentKey (a key derived from the inbound
// request, server.DownstreamKey, makes a retried handler find the same
// intent), secrets kept out of the record. WithAdopt is refused
// (ErrInvalidRequest): adopting writes outside tx; call Adopt first.
// Until tx commits, the intent is visible to tx alone: Do before the
// commit, or after a rollback, fails with keystore.ErrNotFound. The
// secrets of req are kept with the returned Intent until its first Do,
// so only a Do on that Intent (or a process resuming it with
// WithRequestEditor) sends them.
func (c *Client) BeginTx(ctx context.Context, tx any, name string, req *http.Request, opts ...BeginOption) (*Intent, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	if tx == nil {
		return nil, fmt.Errorf("%w: BeginTx: nil transaction", ErrInvalidRequest)
	}
	txc, ok := c.store.(keystore.TxCreator)
	if !ok {
		return nil, fmt.Errorf("%w: the keystore is a %T (keystore.TxCreator is needed: open the Postgres keystore on the transaction's database)", ErrTxUnsupported, c.store)
	}
	bopts, err := beginOptions(opts)
	if err != nil {
		return nil, err
	}
	if bopts.adopt != "" {
		return nil, fmt.Errorf("%w: BeginTx does not adopt (WithAdopt writes outside the transaction): call Client.Adopt first", ErrInvalidRequest)
	}
	return c.begin(ctx, &txTarget{creator: txc, tx: tx}, name, req, bopts)
}

// txTarget is the caller's transaction BeginTx writes the intent in.
type txTarget struct {
	creator keystore.TxCreator
	tx      any
}

// createInTx creates rec in the caller's transaction, claimed for this
// Client. A failure is not settled by reading the keystore again, as
// Begin does: whatever the statement did is in tx, which the caller rolls
// back. ownKey says the key is the caller's (WithIntentKey), which may
// name an intent already stored.
func (c *Client) createInTx(ctx context.Context, t *txTarget, rec *keystore.Record, ownKey bool) (*keystore.Record, bool, error) {
	var existing *keystore.Record
	var created bool
	err := c.readStore(ctx, "storing the intent in the transaction", func(wctx context.Context) (err error) {
		existing, created, err = t.creator.CreateClaimedTx(wctx, t.tx, rec, c.cfg.claims.owner, c.cfg.claims.lease)
		return err
	})
	if err != nil && ownKey && errors.Is(err, keystore.ErrDuplicateKey) {
		// A key of the caller's: it may name this very intent, committed
		// by an earlier attempt of the same request.
		get := func(gctx context.Context, key string) (*keystore.Record, error) {
			return t.creator.GetTx(gctx, t.tx, key)
		}
		if existing, err = c.existingByKey(ctx, rec, err, get); err != nil {
			return nil, false, err
		}
		return existing, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("idem: BeginTx: storing the intent (roll the transaction back): %w", err)
	}
	return existing, created, nil
}

// txBegun is what BeginTx keeps with an Intent for its first Do: the
// secrets of the request and whether BeginTx created the intent. Do hands
// them to the Client's local state once the record is found committed,
// so a transaction rolled back leaves nothing in the Client.
type txBegun struct {
	secrets http.Header
	params  url.Values
	created bool
	once    sync.Once
}

// register hands t's secrets to c, once.
func (t *txBegun) register(c *Client, key string) {
	if t == nil {
		return
	}
	t.once.Do(func() { c.local.begun(key, t.secrets, t.params, t.created) })
}

// notCommitted adds to err, a failed load of a BeginTx intent, what it
// most likely means.
func (t *txBegun) notCommitted(err error) error {
	if t == nil || !errors.Is(err, keystore.ErrNotFound) {
		return err
	}
	return fmt.Errorf("%w (the intent was begun in a transaction: Do runs after that transaction committed; it rolled back, or has not committed yet)", err)
}
