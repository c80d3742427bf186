package keystore

import (
	"context"
	"errors"
	"time"
)

// ErrForeignTx: a store was handed a transaction it cannot write in: a
// value of another type than its own database's transactions, or a
// transaction on another database than the store's. Nothing was written.
// Begin the transaction on the store's database (for pgkeystore, a pgx.Tx
// on the database the keystore was opened on).
var ErrForeignTx = errors.New("keystore: the transaction is not one this keystore can write in")

// TxCreator is offered by stores that live in a database an application
// writes to as well (Postgres): a record can be created inside a
// transaction the caller owns, so the intent and the caller's own rows
// (an order) commit together, or, when the transaction rolls back, none
// of them exists. The transaction is an opaque value (pgkeystore takes a
// pgx.Tx), so this package and the root package never import a database
// driver; a value the store cannot use is ErrForeignTx.
//
// Nothing written in tx is visible to others, nor durable, before the
// caller commits it. The caller commits before anything reads the record
// through the store (Get, Claim, idem's Do), and never holds tx open
// across a call to another service.
//
// Use it through a type assertion:
//
//	if c, ok := store.(keystore.TxCreator); ok { ... }
type TxCreator interface {
	// CreateClaimedTx is Claimer.CreateClaimed made inside tx: the new
	// record is claimed for owner until lease from now on the database
	// clock, where now is when tx began (a lease shorter than tx is
	// spent when it commits, and another worker may then take the
	// record over). A record with the same name, committed or written
	// earlier in tx, is returned with created false; the same key alone
	// is ErrDuplicateKey. A statement that fails leaves tx unusable: roll
	// it back.
	CreateClaimedTx(ctx context.Context, tx any, r *Record, owner string, lease time.Duration) (existing *Record, created bool, err error)
	// GetTx is Get as tx sees it: the records tx wrote included.
	GetTx(ctx context.Context, tx any, key string) (*Record, error)
}
