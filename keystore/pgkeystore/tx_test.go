package pgkeystore

import (
	"context"
	"crypto/rand"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
)

// appPool is the application's own pool on dsn, as an API holds beside
// its keystore, with an orders table in schema.
func appPool(t *testing.T, dsn, schema string) (*pgxpool.Pool, string) {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), dsn)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	orders := pgx.Identifier{schema, "orders"}.Sanitize()
	_, err = pool.Exec(t.Context(), "CREATE TABLE "+orders+" (id text PRIMARY KEY)")
	require.NoError(t, err)
	return pool, orders
}

// The intent commits with the caller's order, claimed for its creator,
// and is invisible to everyone else until then; rolled back, neither
// exists.
func TestCreateClaimedTxCommitsAndRollsBackWithTheCallersRows(t *testing.T) {
	t.Parallel()
	schema := newPostgresTestSchema(t)
	p := openPostgresIn(t, schema, nil)
	pool, orders := appPool(t, testenv.PostgresDSN(t), schema)
	ctx := t.Context()

	r := pendingRecord(1)
	r.Name = "order-1/charge"
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "INSERT INTO "+orders+" (id) VALUES ('order-1')")
	require.NoError(t, err)
	stored, created, err := p.CreateClaimedTx(ctx, tx, r, "api-1", time.Minute)
	require.NoError(t, err)
	assert.True(t, created)
	assert.Equal(t, r.Key, stored.Key)

	_, err = p.Get(ctx, r.Key)
	require.ErrorIs(t, err, keystore.ErrNotFound, "nothing is visible before the commit")
	inTx, err := p.GetTx(ctx, tx, r.Key)
	require.NoError(t, err, "the transaction sees what it wrote")
	assert.Equal(t, r.Name, inTx.Name)
	again, created, err := p.CreateClaimedTx(ctx, tx, pendingRecordNamed(2, r.Name), "api-1", time.Minute)
	require.NoError(t, err)
	assert.False(t, created, "the name is taken within the transaction")
	assert.Equal(t, r.Key, again.Key)
	require.NoError(t, tx.Commit(ctx))

	got, err := p.Get(ctx, r.Key)
	require.NoError(t, err)
	assert.Equal(t, keystore.Pending, got.State)
	taken, err := p.ClaimKey(ctx, r.Key, "another-worker", time.Minute)
	require.NoError(t, err)
	assert.False(t, taken, "committed claimed for its creator")

	// Rolled back: no order, no intent.
	tx, err = pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "INSERT INTO "+orders+" (id) VALUES ('order-3')")
	require.NoError(t, err)
	_, created, err = p.CreateClaimedTx(ctx, tx, pendingRecord(3), "api-1", time.Minute)
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, tx.Rollback(ctx))
	_, err = p.Get(ctx, pendingRecord(3).Key)
	require.ErrorIs(t, err, keystore.ErrNotFound)
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM "+orders).Scan(&n))
	assert.Equal(t, 1, n)

	// The same key under another name is a duplicate, in a transaction too.
	tx, err = pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	dup := pendingRecordNamed(4, "another")
	dup.Key = r.Key
	_, _, err = p.CreateClaimedTx(ctx, tx, dup, "api-1", time.Minute)
	require.ErrorIs(t, err, keystore.ErrDuplicateKey)
}

// pendingRecordNamed is pendingRecord(i) under name.
func pendingRecordNamed(i int, name string) *keystore.Record {
	r := pendingRecord(i)
	r.Name = name
	return r
}

// A transaction the keystore cannot write in is refused before anything
// is written: another type, or a transaction on another database. The
// keystore's database reached under another host name is accepted.
func TestCreateClaimedTxRefusesAForeignTransaction(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	p := openTestPostgres(t)
	ctx := t.Context()

	_, _, err := p.CreateClaimedTx(ctx, "not a transaction", pendingRecord(1), "api-1", time.Minute)
	require.ErrorIs(t, err, keystore.ErrForeignTx)
	assert.Contains(t, err.Error(), "want a pgx.Tx")
	_, err = p.GetTx(ctx, nil, "key-0001")
	require.ErrorIs(t, err, keystore.ErrForeignTx)

	other := otherDatabase(t, dsn)
	conn, err := pgx.Connect(ctx, testenv.DirectDSN(other))
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.Background()) }()
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, _, err = p.CreateClaimedTx(ctx, tx, pendingRecord(1), "api-1", time.Minute)
	require.ErrorIs(t, err, keystore.ErrForeignTx)
	assert.Contains(t, err.Error(), "begin the transaction on the keystore's database")

	u, err := url.Parse(dsn)
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Skip("the DSN's host is not 127.0.0.1; cannot spell it otherwise")
	}
	u.Host = strings.Replace(u.Host, "127.0.0.1", "localhost", 1)
	same, err := pgx.Connect(ctx, testenv.DirectDSN(u.String()))
	require.NoError(t, err)
	defer func() { _ = same.Close(context.Background()) }()
	tx2, err := same.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx2.Rollback(context.Background()) }()
	_, created, err := p.CreateClaimedTx(ctx, tx2, pendingRecord(2), "api-1", time.Minute)
	require.NoError(t, err, "the keystore's own database under another host name")
	assert.True(t, created)
}

// otherDatabase creates a database of the test's own on the server of dsn,
// dropped when the test ends, and returns its DSN.
func otherDatabase(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		t.Skip("the test DSN is not a URL; cannot name another database")
	}
	name := "idem_txdb_" + strings.ToLower(rand.Text())
	admin, err := pgx.Connect(t.Context(), testenv.DirectDSN(dsn))
	require.NoError(t, err)
	defer func() { _ = admin.Close(context.Background()) }()
	if _, err := admin.Exec(t.Context(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Skipf("cannot create a database to stand for another one: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, testenv.DirectDSN(dsn))
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer func() { _ = conn.Close(ctx) }()
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// Two transactions begin one intent (a handler and its retry after a
// takeover): the second waits for the first; once the first commits it
// gets the committed intent back, and only one exists.
func TestCreateClaimedTxConcurrentTransactionsShareOneIntent(t *testing.T) {
	t.Parallel()
	schema := newPostgresTestSchema(t)
	p := openPostgresIn(t, schema, nil)
	pool, _ := appPool(t, testenv.PostgresDSN(t), schema)
	ctx := t.Context()

	first, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = first.Rollback(context.Background()) }()
	_, created, err := p.CreateClaimedTx(ctx, first, pendingRecordNamed(1, "orders/o-1/charge"), "api-1", time.Minute)
	require.NoError(t, err)
	require.True(t, created)

	type outcome struct {
		r       *keystore.Record
		created bool
		err     error
	}
	done := make(chan outcome, 1)
	go func() {
		second, err := pool.Begin(ctx)
		if err != nil {
			done <- outcome{err: err}
			return
		}
		defer func() { _ = second.Rollback(context.Background()) }()
		r, created, err := p.CreateClaimedTx(ctx, second, pendingRecordNamed(1, "orders/o-1/charge"), "api-2", time.Minute)
		if err == nil {
			err = second.Commit(ctx)
		}
		done <- outcome{r, created, err}
	}()
	// The second insert waits on the first's row lock, as the server
	// reports it.
	require.Eventually(t, func() bool {
		var waiting int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO %' AND query LIKE '%' || $1 || '%'`, schema).Scan(&waiting)
		return err == nil && waiting == 1
	}, 10*time.Second, 10*time.Millisecond, "the second transaction waits for the first")
	select {
	case o := <-done:
		t.Fatalf("the second transaction did not wait for the first: %+v", o)
	default:
	}
	require.NoError(t, first.Commit(ctx))
	var o outcome
	select {
	case o = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the second transaction is still waiting after the first committed")
	}
	require.NoError(t, o.err)
	assert.False(t, o.created, "the committed intent is returned")
	assert.Equal(t, pendingRecord(1).Key, o.r.Key)
	recs, err := p.List(ctx, keystore.Filter{})
	require.NoError(t, err)
	assert.Len(t, recs, 1)
}
