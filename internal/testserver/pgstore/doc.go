// Package pgstore is the reference server's testserver.Store in
// PostgreSQL: server/pgstore's idempotency records, with the payments and
// operations tables beside them, each effect committed in the same
// transaction as its key's completion (server/pgstore's CompleteTx).
package pgstore
