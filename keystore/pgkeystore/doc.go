// Package pgkeystore is the Postgres keystore: one table of intents that
// a fleet of workers shares, which claim intents (keystore.Claimer) so no
// two send one at the same time, and fence each other's writes. Beside
// it, a table of saga runs (keystore.RunKeeper, table <table>_runs), so
// any worker takes up a run another began. It also writes an intent in
// a transaction of the application's own (keystore.TxCreator: a pgx.Tx on
// the keystore's database), so idem.Client.BeginTx commits an order and
// the intent of its provider call together.
//
// It lives in its own package so that programs with a bbolt or memory
// keystore do not carry the Postgres driver. Importing it registers its
// opener for postgres:// and postgresql:// URLs, so keystore.Open and
// idem.WithKeystore open them:
//
//	import _ "github.com/idemkit/idem/keystore/pgkeystore"
//
//	client, err := idem.New(idem.WithKeystore(ctx, os.Getenv("IDEM_KEYSTORE")))
//
// WithOptions passes Options (schema, table, pool size, logger) through
// keystore.Open; Open opens a store directly.
package pgkeystore
