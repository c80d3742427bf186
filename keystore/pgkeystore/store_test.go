package pgkeystore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
)

// newPostgresTestSchema names a schema of its own for one test and drops it
// when the test ends, so tests (and packages) sharing one database never
// see each other's records.
func newPostgresTestSchema(tb testing.TB) string {
	tb.Helper()
	return testenv.PostgresSchema(tb, testenv.PostgresDSN(tb), "idem_kst_")
}

// openPostgresIn opens a store (its own pool, like another process would)
// on schema and closes it when the test ends.
func openPostgresIn(tb testing.TB, schema string, opts *Options) *Store {
	tb.Helper()
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.Schema = schema
	p, err := Open(context.Background(), testenv.PostgresDSN(tb), &o)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = p.Close() })
	return p
}

// openTestPostgres opens a store on a fresh schema.
func openTestPostgres(tb testing.TB) *Store {
	tb.Helper()
	return openPostgresIn(tb, newPostgresTestSchema(tb), nil)
}

var pgTestEpoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// pendingRecord returns a pending record created i seconds after the
// test epoch.
func pendingRecord(i int) *keystore.Record {
	at := pgTestEpoch.Add(time.Duration(i) * time.Second)
	return &keystore.Record{
		Key:         fmt.Sprintf("key-%04d", i),
		Method:      "POST",
		URL:         "https://pay.example/v1/payments",
		Header:      map[string][]string{"Content-Type": {"application/json"}},
		Body:        []byte(fmt.Sprintf(`{"amount":%d}`, i)),
		Fingerprint: fmt.Sprintf("fp-%d", i),
		State:       keystore.Pending,
		CreatedAt:   at,
		UpdatedAt:   at,
	}
}

// seedPending creates n pending records 0..n-1 and returns their keys.
func seedPending(t *testing.T, s keystore.Store, n int) []string {
	t.Helper()
	keys := make([]string, n)
	for i := range n {
		r := pendingRecord(i)
		_, created, err := s.Create(context.Background(), r)
		require.NoError(t, err)
		require.True(t, created)
		keys[i] = r.Key
	}
	return keys
}

func TestPostgresRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := openTestPostgres(t)

	r := pendingRecord(1)
	r.Name = "order-42"
	r.CreatedAt = time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	stored, created, err := p.Create(ctx, r)
	require.NoError(t, err)
	require.True(t, created)
	assert.Equal(t, 123456000, stored.CreatedAt.Nanosecond(), "Create returns the record as stored, at microsecond precision")

	got, err := p.Get(ctx, r.Key)
	require.NoError(t, err)
	assert.True(t, got.CreatedAt.Equal(stored.CreatedAt))
	assert.Equal(t, r.Header, got.Header)
	assert.Equal(t, r.Body, got.Body)
	assert.Equal(t, "order-42", got.Name)
	assert.Nil(t, got.Response)

	got.State = keystore.Succeeded
	got.Attempts = 3
	got.Response = &keystore.Response{Status: 201, Header: map[string][]string{"Location": {"/v1/payments/pay_1"}}, Body: []byte(`{"id":"pay_1"}`)}
	got.Operation = "/v1/operations/op_1"
	got.LastError = "gateway timeout"
	got.UpdatedAt = got.UpdatedAt.Add(time.Minute)
	require.NoError(t, p.Update(ctx, got))

	again, err := p.GetByName(ctx, "order-42")
	require.NoError(t, err)
	assert.Equal(t, keystore.Succeeded, again.State)
	assert.Equal(t, 3, again.Attempts)
	assert.Equal(t, got.Response, again.Response)
	assert.Equal(t, got.Operation, again.Operation)
	assert.Equal(t, got.LastError, again.LastError)
	assert.True(t, got.UpdatedAt.Equal(again.UpdatedAt))
}

func TestPostgresNilAndEmptyAreKeptApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := openTestPostgres(t)

	withNil := pendingRecord(1)
	withNil.Header, withNil.Body = nil, nil
	withEmpty := pendingRecord(2)
	withEmpty.Header, withEmpty.Body = map[string][]string{}, []byte{}
	for _, r := range []*keystore.Record{withNil, withEmpty} {
		_, _, err := p.Create(ctx, r)
		require.NoError(t, err)
	}

	got, err := p.Get(ctx, withNil.Key)
	require.NoError(t, err)
	assert.Nil(t, got.Header)
	assert.Nil(t, got.Body)
	got, err = p.Get(ctx, withEmpty.Key)
	require.NoError(t, err)
	assert.NotNil(t, got.Header)
	assert.Empty(t, got.Header)
	assert.NotNil(t, got.Body)
	assert.Empty(t, got.Body)
}

func TestPostgresCreateConflicts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := openTestPostgres(t)

	first := pendingRecord(1)
	first.Name = "refund-7"
	_, _, err := p.Create(ctx, first)
	require.NoError(t, err)

	sameName := pendingRecord(2)
	sameName.Name = "refund-7"
	existing, created, err := p.Create(ctx, sameName)
	require.NoError(t, err)
	assert.False(t, created)
	require.NotNil(t, existing)
	assert.Equal(t, first.Key, existing.Key)
	_, err = p.Get(ctx, sameName.Key)
	assert.ErrorIs(t, err, keystore.ErrNotFound, "a name conflict writes nothing")

	sameKey := pendingRecord(1)
	sameKey.Name = "other"
	_, _, err = p.Create(ctx, sameKey)
	assert.ErrorIs(t, err, keystore.ErrDuplicateKey)
	_, err = p.GetByName(ctx, "other")
	assert.ErrorIs(t, err, keystore.ErrNotFound)

	// Unnamed records never collide on the name.
	for i := 10; i < 13; i++ {
		_, created, err := p.Create(ctx, pendingRecord(i))
		require.NoError(t, err)
		assert.True(t, created)
	}
}

func TestPostgresConcurrentCreatesOfOneNameAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	stores := []*Store{openPostgresIn(t, schema, nil), openPostgresIn(t, schema, nil)}

	const n = 24
	var wg sync.WaitGroup
	keys := make([]string, n)
	createdBy := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := pendingRecord(i)
			r.Name = "invoice-2025-001"
			existing, created, err := stores[i%2].Create(ctx, r)
			errs[i], createdBy[i] = err, created
			if err == nil {
				keys[i] = existing.Key
			}
		}()
	}
	wg.Wait()

	winners := 0
	for i := range n {
		require.NoError(t, errs[i])
		if createdBy[i] {
			winners++
		}
		assert.Equal(t, keys[0], keys[i], "every caller sees the one record holding the name")
	}
	assert.Equal(t, 1, winners)
	all, err := stores[0].List(ctx, keystore.Filter{})
	require.NoError(t, err)
	assert.Len(t, all, 1)
}

func TestPostgresUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := openTestPostgres(t)

	missing := pendingRecord(1)
	assert.ErrorIs(t, p.Update(ctx, missing), keystore.ErrNotFound)

	r := pendingRecord(2)
	r.Name = "payout-1"
	_, _, err := p.Create(ctx, r)
	require.NoError(t, err)
	renamed := r.Clone()
	renamed.Name = "payout-2"
	err = p.Update(ctx, renamed)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "name is immutable")

	got, err := p.GetByName(ctx, "payout-1")
	require.NoError(t, err)
	assert.Equal(t, r.Key, got.Key)
}

func TestPostgresListAndPurge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	p := openPostgresIn(t, schema, &Options{PurgeBatch: 7})

	cutoff := pgTestEpoch.Add(time.Hour)
	for i := range 40 {
		r := pendingRecord(i)
		switch {
		case i < 30: // old and final: purged (expired ones too, with IncludeUnknown), the named ones to tombstones
			r.State = []keystore.State{keystore.Succeeded, keystore.Failed, keystore.Expired}[i%3]
			if i%2 == 0 {
				r.Name = fmt.Sprintf("order-%d", i)
			}
		case i < 35: // old but pending: kept
		default: // final but recent: kept
			r.State = keystore.Succeeded
			r.UpdatedAt = cutoff.Add(time.Minute)
		}
		_, _, err := p.Create(ctx, r)
		require.NoError(t, err)
	}

	pending, err := p.List(ctx, keystore.Filter{States: []keystore.State{keystore.Pending}})
	require.NoError(t, err)
	require.Len(t, pending, 5)
	for i, r := range pending {
		assert.Equal(t, pendingRecord(30+i).Key, r.Key, "oldest first")
	}
	early, err := p.List(ctx, keystore.Filter{CreatedBefore: pgTestEpoch.Add(3 * time.Second)})
	require.NoError(t, err)
	assert.Len(t, early, 3, "CreatedBefore is strict")

	res, err := p.Purge(ctx, keystore.PurgeRequest{OlderThan: cutoff})
	require.NoError(t, err)
	assert.Equal(t, keystore.PurgeResult{Deleted: 10, Tombstoned: 10}, res, "expired records, outcome unknown, are kept")
	res, err = p.Purge(ctx, keystore.PurgeRequest{OlderThan: cutoff, IncludeUnknown: true})
	require.NoError(t, err)
	assert.Equal(t, keystore.PurgeResult{Deleted: 5, Tombstoned: 5}, res, "purge keeps going batch after batch")
	left, err := p.List(ctx, keystore.Filter{})
	require.NoError(t, err)
	assert.Len(t, left, 25)
	tomb, err := p.GetByName(ctx, "order-4")
	require.NoError(t, err)
	assert.Equal(t, pendingRecord(4).Key, tomb.Key)
	assert.False(t, tomb.Purged.IsZero())
	assert.Nil(t, tomb.Body)
	res, err = p.Purge(ctx, keystore.PurgeRequest{OlderThan: cutoff, IncludeUnknown: true})
	require.NoError(t, err)
	assert.Zero(t, res, "tombstones stay until the retention cutoff passes")

	res, err = p.Purge(ctx, keystore.PurgeRequest{OlderThan: cutoff, KeepNamesAfter: cutoff, IncludeUnknown: true})
	require.NoError(t, err)
	assert.Equal(t, keystore.PurgeResult{Deleted: 15}, res)
	left, err = p.List(ctx, keystore.Filter{})
	require.NoError(t, err)
	assert.Len(t, left, 10)
}

func TestPostgresTextThatPostgresCannotHold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := openTestPostgres(t)

	badName := pendingRecord(1)
	badName.Name = "order\x0042"
	_, _, err := p.Create(ctx, badName)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "record name is not valid UTF-8")

	// Free text from servers is stored with bad bytes replaced, rather than
	// losing a final outcome over them.
	r := pendingRecord(2)
	r.LastError = "upstream said \xff\x00"
	r.Header = map[string][]string{"X-Odd": {"caf\xe9"}}
	_, _, err = p.Create(ctx, r)
	require.NoError(t, err)
	got, err := p.Get(ctx, r.Key)
	require.NoError(t, err)
	assert.Equal(t, "upstream said \uFFFD\uFFFD", got.LastError)
	assert.Equal(t, []string{"caf\uFFFD"}, got.Header["X-Odd"])
}

func TestPostgresClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := openTestPostgres(t)
	_, _, err := p.Create(ctx, pendingRecord(1))
	require.NoError(t, err)
	require.NoError(t, p.Close())

	assert.ErrorIs(t, p.Close(), keystore.ErrClosed)
	_, err = p.Get(ctx, "key-0001")
	assert.ErrorIs(t, err, keystore.ErrClosed)
	_, _, err = p.Create(ctx, pendingRecord(2))
	assert.ErrorIs(t, err, keystore.ErrClosed)
	_, err = p.Claim(ctx, "w1", time.Minute, 1)
	assert.ErrorIs(t, err, keystore.ErrClosed)
	_, err = p.ClaimKey(ctx, "key-0001", "w1", time.Minute)
	assert.ErrorIs(t, err, keystore.ErrClosed)
	assert.ErrorIs(t, p.Unclaim(ctx, "key-0001", "w1"), keystore.ErrClosed)
}

func TestPostgresSurvivesReopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	first := openPostgresIn(t, schema, nil)
	keys := seedPending(t, first, 3)
	require.NoError(t, first.Close())

	second := openPostgresIn(t, schema, nil)
	for _, k := range keys {
		_, err := second.Get(ctx, k)
		assert.NoError(t, err)
	}
}

func TestPostgresConcurrentOpenersOfOneSchema(t *testing.T) {
	t.Parallel()
	schema := newPostgresTestSchema(t)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := Open(context.Background(), testenv.PostgresDSN(t), &Options{Schema: schema})
			errs[i] = err
			if err == nil {
				_ = p.Close()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		assert.NoError(t, err)
	}
}

func TestPostgresRefusesForeignTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	conn, err := pgx.Connect(ctx, testenv.DirectDSN(testenv.PostgresDSN(t)))
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, `CREATE SCHEMA `+schema+`; CREATE TABLE `+schema+`.intents (id integer PRIMARY KEY)`)
	require.NoError(t, err)

	_, err = Open(ctx, testenv.PostgresDSN(t), &Options{Schema: schema})
	assert.ErrorIs(t, err, keystore.ErrCorrupt)
}

func TestPostgresOpensWithoutCreatePrivilege(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	openPostgresIn(t, schema, nil) // an administrator creates the keystore

	// The application's role may only read and write the table.
	u, err := url.Parse(testenv.DirectDSN(testenv.PostgresDSN(t)))
	if err != nil || u.Scheme == "" {
		t.Skip("IDEM_TEST_POSTGRES is not a URL; cannot derive a DSN for a restricted role")
	}
	admin, err := pgx.Connect(ctx, u.String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(ctx) }) // after the role is dropped
	role := schema + "_app"
	var b [12]byte
	_, _ = rand.Read(b[:])
	password := hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, `CREATE ROLE `+role+` LOGIN PASSWORD '`+password+`'`); err != nil {
		t.Skipf("cannot create a role with the test DSN's user: %v", err)
	}
	t.Cleanup(func() {
		_, err := admin.Exec(ctx, `DROP OWNED BY `+role)
		assert.NoError(t, err)
		_, err = admin.Exec(ctx, `DROP ROLE `+role)
		assert.NoError(t, err)
	})
	_, err = admin.Exec(ctx, `GRANT USAGE ON SCHEMA `+schema+` TO `+role+`;
		GRANT SELECT, INSERT, UPDATE, DELETE ON `+schema+`.intents TO `+role)
	require.NoError(t, err)

	u.User = url.UserPassword(role, password)
	p, err := Open(ctx, u.String(), &Options{Schema: schema})
	require.NoError(t, err, "opening an existing keystore needs no CREATE privilege")
	defer func() { _ = p.Close() }()
	_, created, err := p.Create(ctx, pendingRecord(1))
	require.NoError(t, err)
	assert.True(t, created)
	ok, err := p.ClaimKey(ctx, pendingRecord(1).Key, "app", time.Minute)
	require.NoError(t, err)
	assert.True(t, ok)
}

func TestPostgresPoolSize(t *testing.T) {
	t.Parallel()
	schema := newPostgresTestSchema(t)
	// The test DSN caps pools; the default shows on a DSN without the cap.
	p, err := Open(context.Background(), testenv.DirectDSN(testenv.PostgresDSN(t)), &Options{Schema: schema})
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	assert.Equal(t, DefaultMaxConns, p.pool.Stat().MaxConns(), "the default pool covers concurrent calls, not CPUs")
	p = openPostgresIn(t, schema, &Options{MaxConns: 5})
	assert.Equal(t, int32(5), p.pool.Stat().MaxConns())
}

func TestPostgresBadOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, opts := range []*Options{
		{Schema: "Payments"},
		{Schema: "idem; DROP TABLE x"},
		{Table: "1intents"},
		{Table: "a_table_name_that_is_far_too_long_to_leave_room_for_indexes"},
		{ConnectTimeout: -time.Second},
	} {
		_, err := Open(ctx, "postgres://postgres@127.0.0.1:1/test", opts)
		assert.Error(t, err, "%+v", opts)
		assert.NotContains(t, fmt.Sprint(err), "cannot reach", "options are checked before connecting")
	}
	_, err := Open(ctx, "postgres://postgres@127.0.0.1:notaport/test", nil)
	assert.ErrorContains(t, err, "invalid DSN")
}

func TestPostgresUnreachable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("connection refused", func(t *testing.T) {
		t.Parallel()
		_, err := Open(ctx, "postgres://postgres@"+testenv.ClosedAddr(t)+"/test?sslmode=disable", nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cannot reach 127.0.0.1")
	})

	t.Run("server that never answers", func(t *testing.T) {
		t.Parallel()
		// A listener that accepts and then stays silent: without a connect
		// timeout the startup handshake would wait forever. The context has
		// no deadline, so only ConnectTimeout can end the wait.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		var held sync.WaitGroup
		held.Add(1)
		go func() {
			defer held.Done()
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					_ = c.Close()
				}
			}()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				conns = append(conns, c)
			}
		}()
		t.Cleanup(func() {
			_ = ln.Close()
			held.Wait()
		})

		_, err = Open(ctx, "postgres://postgres@"+ln.Addr().String()+"/test?sslmode=disable",
			&Options{ConnectTimeout: 200 * time.Millisecond})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cannot reach 127.0.0.1")
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
}
