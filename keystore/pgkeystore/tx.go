package pgkeystore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/keystore"
)

var _ keystore.TxCreator = (*Store)(nil)

// CreateClaimedTx implements keystore.TxCreator: CreateClaimed inside tx,
// which must be a pgx.Tx on the keystore's database (keystore.ErrForeignTx
// otherwise, with nothing written). The intent then commits, or rolls
// back, with the caller's own rows: an API handler writes its order and
// the intent of the provider call in one commit, and sends the call
// (idem.Client.Do) after the commit, never inside the transaction.
//
// The claim runs lease from the start of tx (PostgreSQL's now()): a
// transaction that outlasts the lease commits an intent another worker
// may claim at once.
func (p *Store) CreateClaimedTx(ctx context.Context, tx any, r *keystore.Record, owner string, lease time.Duration) (*keystore.Record, bool, error) {
	if err := p.checkWrite(ctx, "create", r); err != nil {
		return nil, false, err
	}
	if err := validatePostgresClaim(owner, lease); err != nil {
		return nil, false, err
	}
	t, err := p.ownTx(ctx, tx)
	if err != nil {
		return nil, false, err
	}
	args := append(postgresRecordArgs(r), owner, lease.Microseconds())
	return p.create(ctx, t, r, p.sql.insertClaimed, args)
}

// GetTx implements keystore.TxCreator: Get as tx, a pgx.Tx on the
// keystore's database, sees it.
func (p *Store) GetTx(ctx context.Context, tx any, key string) (*keystore.Record, error) {
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	t, err := p.ownTx(ctx, tx)
	if err != nil {
		return nil, err
	}
	return p.getOn(ctx, t, key)
}

// ownTx is tx as a pgx.Tx on the keystore's database, or
// keystore.ErrForeignTx. A connection configured with the pool's host,
// port and database is taken at its word; any other (another spelling of
// the host, a proxy) is asked which database it is on, one round trip.
func (p *Store) ownTx(ctx context.Context, tx any) (pgx.Tx, error) {
	t, ok := tx.(pgx.Tx)
	if !ok || t == nil {
		return nil, fmt.Errorf("%w: want a pgx.Tx begun on the keystore's database, got %T", keystore.ErrForeignTx, tx)
	}
	conn := t.Conn()
	if conn == nil || conn.Config() == nil {
		return nil, fmt.Errorf("%w: the pgx.Tx has no connection", keystore.ErrForeignTx)
	}
	mine, theirs := p.pool.Config().ConnConfig, conn.Config()
	if mine.Host == theirs.Host && mine.Port == theirs.Port && mine.Database == theirs.Database {
		return t, nil
	}
	got, err := databaseIdentity(ctx, t, p.sql.table)
	if err != nil {
		return nil, p.wrap("identify the transaction's database", err)
	}
	want, err := databaseIdentity(ctx, p.pool, p.sql.table)
	if err != nil {
		return nil, p.wrap("identify the keystore's database", err)
	}
	if got != want {
		return nil, fmt.Errorf("%w: the transaction is on database %q at %s:%d, the keystore on %q at %s:%d (another server, database, or a keystore table it lacks): begin the transaction on the keystore's database",
			keystore.ErrForeignTx, theirs.Database, theirs.Host, theirs.Port, mine.Database, mine.Host, mine.Port)
	}
	return t, nil
}

// databaseIdentity names the server instance, database and keystore
// table q runs on: two connections that give the same answer write into
// the same table. The keystore table's OID is 0 where it does not exist.
func databaseIdentity(ctx context.Context, q querier, table string) (string, error) {
	var id string
	err := q.QueryRow(ctx, `SELECT current_database() || '/' || pg_postmaster_start_time()::text || '/' ||
		coalesce(to_regclass($1)::oid, 0)::text`, table).Scan(&id)
	return id, err
}
