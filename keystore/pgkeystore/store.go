package pgkeystore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem/internal/pgpool"
	"github.com/idemkit/idem/keystore"
)

// Defaults of Options.
const (
	DefaultSchema         = "idem"
	DefaultTable          = "intents"
	DefaultConnectTimeout = 5 * time.Second
	DefaultPurgeBatch     = 500
	// DefaultMaxConns is the pool size when neither MaxConns nor
	// the DSN's pool_max_conns sets one: enough for 16 calls in flight.
	// Calls wait on round trips and commits, not on CPUs, so pgxpool's
	// own default, the larger of 4 and the number of CPUs, would queue
	// concurrent Begins on a small machine.
	DefaultMaxConns = pgpool.DefaultMaxConns
)

// Options tune Open. The zero value (or nil) is ready to use.
type Options struct {
	// Schema holds the keystore table; created if absent. Default "idem".
	// Lower-case letters, digits and underscores, at most 48 characters.
	Schema string
	// Table is the keystore table's name; created if absent. Default
	// "intents". Same alphabet as Schema.
	Table string
	// Logger receives debug records about opening, claims and purges.
	// Keys appear only as short hashes. Nil discards everything.
	Logger *slog.Logger
	// ConnectTimeout bounds each new connection (dial, TLS, startup) when
	// the DSN sets no connect_timeout, so an unreachable server fails fast
	// instead of hanging. Default 5 s.
	ConnectTimeout time.Duration
	// MaxConns is the size of the connection pool. 0 takes the DSN's
	// pool_max_conns if it sets one, else DefaultMaxConns.
	MaxConns int32
	// PurgeBatch is how many records one Purge statement deletes at most,
	// so a large purge never holds locks on the whole table. Default 500.
	PurgeBatch int
	// NoCreate makes Open fail with ErrNoKeystore, creating nothing, when
	// the schema or the table does not exist, for a program that only
	// inspects an existing keystore (the idem command's intents
	// commands): a mistyped schema, table or database is then an error,
	// not a new empty keystore. A table that predates some columns still
	// gets them (see Open).
	NoCreate bool
}

// ErrNoKeystore is Open's error, with Options.NoCreate, when the schema
// or the table does not exist.
var ErrNoKeystore = errors.New("keystore: postgres: no idem keystore")

// Store is a keystore.Store in a PostgreSQL table that several processes share.
// It also implements keystore.Claimer, so workers on different hosts can resume
// pending intents without sending one twice at the same time.
//
// Durability: every write is a committed statement (autocommit) by the time
// its method returns; how durable a commit is follows the server's
// synchronous_commit setting. Times are stored with microsecond precision.
type Store struct {
	pool       *pgxpool.Pool
	sql        postgresSQL
	runSQL     postgresRunSQL
	log        *slog.Logger
	purgeBatch int
	closed     atomic.Bool
}

var (
	_ keystore.Store   = (*Store)(nil)
	_ keystore.Claimer = (*Store)(nil)
)

// Open connects to the database at dsn (a postgres:// URL or a
// key=value string), creates the keystore schema and table if they do not
// exist (unless opts.NoCreate), adds the columns an older table lacks, and
// returns the store. Processes may open the same keystore at the
// same time. opts may be nil.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	o, err := normalizePostgresOptions(opts)
	if err != nil {
		return nil, err
	}
	cfg, err := pgpool.Config(dsn, o.ConnectTimeout, o.MaxConns)
	if err != nil {
		// pgx's parse errors redact the password.
		return nil, fmt.Errorf("keystore: postgres: invalid DSN: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("keystore: postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("keystore: postgres: cannot reach %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, oneLine(err))
	}
	if err := ensurePostgresSchema(ctx, pool, o.Schema, o.Table, !o.NoCreate); err != nil {
		pool.Close()
		return nil, err
	}
	p := &Store{
		pool:       pool,
		sql:        newPostgresSQL(o.Schema, o.Table),
		runSQL:     newPostgresRunSQL(o.Schema, o.Table),
		log:        o.Logger,
		purgeBatch: o.PurgeBatch,
	}
	p.log.Debug("keystore: postgres opened", "schema", o.Schema, "table", o.Table)
	return p, nil
}

// normalizePostgresOptions fills in defaults and rejects bad names.
func normalizePostgresOptions(opts *Options) (Options, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if o.Table == "" {
		o.Table = DefaultTable
	}
	for _, n := range []struct{ what, name string }{{"schema", o.Schema}, {"table", o.Table}} {
		if !postgresIdentifier.MatchString(n.name) {
			return o, fmt.Errorf("keystore: postgres: invalid %s name %q: want lower-case letters, digits and underscores, starting with a letter or underscore, at most 48 characters", n.what, n.name)
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ConnectTimeout < 0 || o.MaxConns < 0 || o.PurgeBatch < 0 {
		return o, errors.New("keystore: postgres: ConnectTimeout, MaxConns and PurgeBatch must not be negative")
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.PurgeBatch == 0 {
		o.PurgeBatch = DefaultPurgeBatch
	}
	return o, nil
}

// Create stores r and returns the record as stored (times at microsecond
// precision). A conflict on the name returns the record that holds the name
// and created=false; a conflict on the key alone is ErrDuplicateKey.
//
// The insert is a single INSERT ... ON CONFLICT DO NOTHING: when two
// processes create one name at once, the second insert waits for the first
// to commit and then does nothing, and the read that follows sees the
// committed winner, so both callers agree on one record. The winner could
// vanish between the two statements (updated and purged, or deleted by an
// operator); then the insert is simply tried again.
func (p *Store) Create(ctx context.Context, r *keystore.Record) (*keystore.Record, bool, error) {
	if err := p.checkWrite(ctx, "create", r); err != nil {
		return nil, false, err
	}
	return p.create(ctx, p.pool, r, p.sql.insert, postgresRecordArgs(r))
}

// querier is where a statement runs: the pool (autocommit), or a
// transaction of the caller's (TxCreator).
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// create runs insert on q, a statement that inserts r with args unless
// its key or name is taken, and works out the outcome as Create
// describes.
func (p *Store) create(ctx context.Context, q querier, r *keystore.Record, insert string, args []any) (*keystore.Record, bool, error) {
	for range 3 {
		tag, err := q.Exec(ctx, insert, args...)
		if err != nil {
			return nil, false, p.fail("create", r.Key, err)
		}
		if tag.RowsAffected() == 1 {
			return storedPostgresRecord(r), true, nil
		}
		if r.Name != "" {
			existing, err := p.getByNameOn(ctx, q, r.Name)
			if err == nil {
				return existing, false, nil
			}
			if !errors.Is(err, keystore.ErrNotFound) {
				return nil, false, err
			}
		}
		exists, err := p.existsOn(ctx, q, r.Key)
		if err != nil {
			return nil, false, p.fail("create", r.Key, err)
		}
		if exists {
			return nil, false, fmt.Errorf("%w: %s", keystore.ErrDuplicateKey, keystore.KeyRef(r.Key))
		}
	}
	return nil, false, fmt.Errorf("keystore: postgres: create %s: the conflicting record kept disappearing under concurrent writers; try again", keystore.KeyRef(r.Key))
}

// Get returns the record with key, or ErrNotFound.
func (p *Store) Get(ctx context.Context, key string) (*keystore.Record, error) {
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	return p.getOn(ctx, p.pool, key)
}

// getOn is Get run on q.
func (p *Store) getOn(ctx context.Context, q querier, key string) (*keystore.Record, error) {
	r, err := scanPostgresRecord(q.QueryRow(ctx, p.sql.getByKey, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", keystore.ErrNotFound, keystore.KeyRef(key))
	}
	if err != nil {
		return nil, p.fail("get", key, err)
	}
	return r, nil
}

// GetByName returns the record with name, or ErrNotFound. The empty name
// names no record.
func (p *Store) GetByName(ctx context.Context, name string) (*keystore.Record, error) {
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	if name == "" {
		return nil, fmt.Errorf("%w: empty name", keystore.ErrNotFound)
	}
	return p.getByNameOn(ctx, p.pool, name)
}

// getByNameOn is GetByName run on q.
func (p *Store) getByNameOn(ctx context.Context, q querier, name string) (*keystore.Record, error) {
	r, err := scanPostgresRecord(q.QueryRow(ctx, p.sql.getByName, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: no record with that name", keystore.ErrNotFound)
	}
	if err != nil {
		return nil, p.wrap("get by name", err)
	}
	return r, nil
}

// Update replaces the record with r.Key; ErrNotFound if absent. A record's
// name is fixed for life: an Update that changes it is an error. A
// settled record is never changed into another state (ErrSettled, see
// keystore.Store): the UPDATE itself checks the stored state. Claims on the record
// are left as they are and not checked; see UpdateClaimed.
func (p *Store) Update(ctx context.Context, r *keystore.Record) error {
	if err := p.checkWrite(ctx, "update", r); err != nil {
		return err
	}
	return p.update(ctx, r, "")
}

// List returns the records matching f, oldest first. Rows that fail
// their checksum are left out and named in a *CorruptRecordsError
// returned with the others.
func (p *Store) List(ctx context.Context, f keystore.Filter) ([]*keystore.Record, error) {
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	var states []string
	if len(f.States) > 0 {
		states = make([]string, len(f.States))
		for i, s := range f.States {
			states[i] = string(s)
		}
	}
	var before *time.Time
	if !f.CreatedBefore.IsZero() {
		before = &f.CreatedBefore
	}
	rows, err := p.pool.Query(ctx, p.sql.list, states, before)
	if err != nil {
		return nil, p.wrap("list", err)
	}
	recs, damaged, _, err := collectPostgresRecords(rows)
	if err != nil {
		return nil, p.wrap("list", err)
	}
	return recs, damaged.Err()
}

// Purge removes settled records as PurgeRequest.Action says, in batches
// of PurgeBatch so no single statement locks much of the table: first it
// deletes what goes for good, then it replaces the rest by tombstones,
// each batch a transaction. Records another transaction holds locked are
// left for a later purge.
func (p *Store) Purge(ctx context.Context, req keystore.PurgeRequest) (keystore.PurgeResult, error) {
	var res keystore.PurgeResult
	if err := p.checkOpen(); err != nil {
		return res, err
	}
	var keepNamesAfter *time.Time // NULL keeps every name
	if !req.KeepNamesAfter.IsZero() {
		keepNamesAfter = &req.KeepNamesAfter
	}
	for {
		tag, err := p.pool.Exec(ctx, p.sql.purge, req.OlderThan, keepNamesAfter, p.purgeBatch, req.IncludeUnknown)
		if err != nil {
			return res, p.wrap("purge", err)
		}
		n := int(tag.RowsAffected())
		res.Deleted += n
		if n < p.purgeBatch {
			break
		}
	}
	after := "" // keys are scanned in order, so each batch starts past the last
	var damaged keystore.CorruptRecords
	for {
		n, last, bad, err := p.tombstoneBatch(ctx, req.OlderThan, keepNamesAfter, after, req.IncludeUnknown)
		res.Tombstoned += n
		if err != nil {
			return res, p.wrap("purge", err)
		}
		damaged.Merge(bad)
		if last == "" {
			break
		}
		after = last
	}
	p.log.Debug("keystore: postgres purged", "deleted", res.Deleted, "tombstoned", res.Tombstoned)
	return res, damaged.Err()
}

// tombstoneBatch replaces by their tombstones up to PurgeBatch records
// with keys after after, in one transaction, and returns how many, the
// last key it looked at ("" when there are no more) and the damaged rows
// it left alone.
func (p *Store) tombstoneBatch(ctx context.Context, olderThan time.Time, keepNamesAfter *time.Time, after string, unknown bool) (int, string, keystore.CorruptRecords, error) {
	var n int
	var last string
	var damaged keystore.CorruptRecords
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		n, last = 0, ""
		rows, err := tx.Query(ctx, p.sql.tombstones, olderThan, keepNamesAfter, after, p.purgeBatch, unknown)
		if err != nil {
			return err
		}
		recs, bad, lastRead, err := collectPostgresRecords(rows)
		if err != nil {
			return err
		}
		damaged = bad
		if len(recs)+bad.Len() == p.purgeBatch {
			last = lastRead
		}
		now := time.Now()
		var batch pgx.Batch
		for _, r := range recs {
			batch.Queue(p.sql.update, postgresRecordArgs(r.Tombstone(now))...)
		}
		if err := tx.SendBatch(ctx, &batch).Close(); err != nil {
			return err
		}
		n = len(recs)
		return nil
	})
	if err != nil {
		return 0, "", keystore.CorruptRecords{}, err
	}
	return n, last, damaged, nil
}

// Close closes the connection pool. Later calls, Close included, fail with
// ErrClosed; calls in flight are cut off.
func (p *Store) Close() error {
	if p.closed.Swap(true) {
		return keystore.ErrClosed
	}
	p.pool.Close()
	return nil
}

func (p *Store) exists(ctx context.Context, key string) (bool, error) {
	return p.existsOn(ctx, p.pool, key)
}

// existsOn is exists run on q.
func (p *Store) existsOn(ctx context.Context, q querier, key string) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, p.sql.exists, key).Scan(&ok)
	return ok, err
}

// checkWrite validates a record for Create or Update: the checks every
// store makes, then what Postgres text columns cannot hold.
func (p *Store) checkWrite(ctx context.Context, op string, r *keystore.Record) error {
	if err := p.checkOpen(); err != nil {
		return err
	}
	if err := keystore.CheckWrite(ctx, op, r); err != nil {
		return err
	}
	return validatePostgresRecord(r)
}

func (p *Store) checkOpen() error {
	if p.closed.Load() {
		return keystore.ErrClosed
	}
	return nil
}

// wrap adds the operation to err, or turns it into ErrClosed when the pool
// was closed under the call.
func (p *Store) wrap(op string, err error) error {
	if p.closed.Load() {
		return fmt.Errorf("%w: %s interrupted: %w", keystore.ErrClosed, op, err)
	}
	return fmt.Errorf("keystore: postgres: %s: %w", op, err)
}

// fail is wrap for operations on one key.
func (p *Store) fail(op, key string, err error) error {
	return p.wrap(op+" "+keystore.KeyRef(key), err)
}
