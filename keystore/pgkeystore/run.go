package pgkeystore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemkit/idem/keystore"
)

var _ keystore.RunKeeper = (*Store)(nil)

// runTableSuffix names the table of saga runs (keystore.RunKeeper) beside
// the keystore table: intents and runs live in one schema, so a fleet
// resumes a run from the database every worker shares.
const runTableSuffix = "_runs"

// postgresRunDDL is the runs table. Open creates it with the others; a
// keystore opened with NoCreate before it existed has none, and reads
// find no run there.
func postgresRunDDL(schema, table string) postgresObject {
	t := pgx.Identifier{schema, table + runTableSuffix}.Sanitize()
	return postgresObject{kind: "table", name: t, create: `CREATE TABLE IF NOT EXISTS ` + t + ` (
			id         text        PRIMARY KEY,
			version    bigint      NOT NULL,
			state      text        NOT NULL,
			doc        bytea       NOT NULL,
			checksum   bytea       NOT NULL,
			created_at timestamptz NOT NULL,
			updated_at timestamptz NOT NULL
		)`}
}

// postgresRunSQL are the statements of the runs table.
type postgresRunSQL struct {
	insert, update, get, version, list string
}

func newPostgresRunSQL(schema, table string) postgresRunSQL {
	t := pgx.Identifier{schema, table + runTableSuffix}.Sanitize()
	return postgresRunSQL{
		// Version 1 over none: the primary key decides between two
		// creators.
		insert: `INSERT INTO ` + t + ` (id, version, state, doc, checksum, created_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING`,
		// Version v over v-1 only: the compare and the set are one
		// statement.
		update: `UPDATE ` + t + ` SET version = $2, state = $3, doc = $4, checksum = $5, updated_at = $6
			WHERE id = $1 AND version = $2 - 1`,
		get:     `SELECT doc, checksum FROM ` + t + ` WHERE id = $1`,
		version: `SELECT version FROM ` + t + ` WHERE id = $1`,
		list:    `SELECT id, doc, checksum FROM ` + t + ` ORDER BY created_at, id`,
	}
}

// encodeRunDoc is the row's document (the whole run as JSON) and its
// SHA-256, so a row changed behind the store's back is ErrCorrupt.
func encodeRunDoc(r *keystore.Run) (doc, sum []byte, err error) {
	doc, err = json.Marshal(r)
	if err != nil {
		return nil, nil, fmt.Errorf("keystore: postgres: encode run %q: %w", r.ID, err)
	}
	s := sha256.Sum256(doc)
	return doc, s[:], nil
}

// decodeRunDoc checks and decodes the row of id.
func decodeRunDoc(id string, doc, sum []byte) (*keystore.Run, error) {
	if s := sha256.Sum256(doc); !bytes.Equal(s[:], sum) {
		return nil, fmt.Errorf("%w: run %q fails its checksum", keystore.ErrCorrupt, id)
	}
	var r keystore.Run
	if err := json.Unmarshal(doc, &r); err != nil {
		return nil, fmt.Errorf("%w: run %q: %v", keystore.ErrCorrupt, id, err)
	}
	if r.ID != id {
		return nil, fmt.Errorf("%w: run stored under %q names itself %q", keystore.ErrCorrupt, id, r.ID)
	}
	return &r, nil
}

// PutRun implements keystore.RunKeeper: one statement compares the
// stored version and writes, committed when it returns.
func (p *Store) PutRun(ctx context.Context, r *keystore.Run) error {
	if err := p.checkOpen(); err != nil {
		return err
	}
	if err := keystore.CheckRun(ctx, r); err != nil {
		return err
	}
	doc, sum, err := encodeRunDoc(r)
	if err != nil {
		return err
	}
	stmt, args := p.runSQL.update, []any{r.ID, int64(r.Version), r.State, doc, sum, r.UpdatedAt}
	if r.Version == 1 {
		stmt, args = p.runSQL.insert, []any{r.ID, int64(r.Version), r.State, doc, sum, r.CreatedAt, r.UpdatedAt}
	}
	tag, err := p.pool.Exec(ctx, stmt, args...)
	if err != nil {
		return p.wrap("put run", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var stored int64
	switch err := p.pool.QueryRow(ctx, p.runSQL.version, r.ID).Scan(&stored); {
	case errors.Is(err, pgx.ErrNoRows):
		stored = 0
	case err != nil:
		return p.wrap("put run", err)
	}
	return fmt.Errorf("%w: run %q is at version %d, the write was version %d", keystore.ErrRunVersion, r.ID, stored, r.Version)
}

// GetRun implements keystore.RunKeeper.
func (p *Store) GetRun(ctx context.Context, id string) (*keystore.Run, error) {
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	var doc, sum []byte
	err := p.pool.QueryRow(ctx, p.runSQL.get, id).Scan(&doc, &sum)
	if errors.Is(err, pgx.ErrNoRows) || isUndefinedTable(err) {
		return nil, fmt.Errorf("%w: run %q", keystore.ErrNotFound, id)
	}
	if err != nil {
		return nil, p.wrap("get run", err)
	}
	return decodeRunDoc(id, doc, sum)
}

// ListRuns implements keystore.RunKeeper.
func (p *Store) ListRuns(ctx context.Context) ([]*keystore.Run, error) {
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	rows, err := p.pool.Query(ctx, p.runSQL.list)
	if isUndefinedTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, p.wrap("list runs", err)
	}
	defer rows.Close()
	var out []*keystore.Run
	var damaged keystore.CorruptRecords
	for rows.Next() {
		var id string
		var doc, sum []byte
		if err := rows.Scan(&id, &doc, &sum); err != nil {
			return nil, p.wrap("list runs", err)
		}
		r, err := decodeRunDoc(id, doc, sum)
		if err != nil {
			damaged.Add(id, err)
			continue
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		if isUndefinedTable(err) {
			return nil, nil
		}
		return nil, p.wrap("list runs", err)
	}
	return out, damaged.Err()
}

// isUndefinedTable reports Postgres's undefined_table: the runs table of
// a keystore opened with NoCreate before it existed.
func isUndefinedTable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "42P01"
}
