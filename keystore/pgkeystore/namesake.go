package pgkeystore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemkit/idem/keystore"
)

var (
	_ keystore.NameScanner = (*Store)(nil)
	_ keystore.Rebinder    = (*Store)(nil)
)

// postgresBusinessName is the business name of the name column in SQL
// (keystore.BusinessName): a name that ends in the principal mark and a
// 32-digit fingerprint loses both. An index on it makes Namesakes one
// indexed read; Namesakes checks each row it returns with
// keystore.IsNamesake, against the row's own principal.
const postgresBusinessName = `(CASE WHEN name ~ '@principal:[0-9a-f]{32}$' THEN left(name, -43) ELSE name END)`

// Namesakes implements keystore.NameScanner.
func (p *Store) Namesakes(ctx context.Context, name string, limit int) ([]*keystore.Record, error) {
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	if name == "" || limit <= 0 {
		return nil, nil
	}
	rows, err := p.pool.Query(ctx, p.sql.namesakes, name, limit)
	if err != nil {
		return nil, p.wrap("namesakes", err)
	}
	recs, damaged, _, err := collectPostgresRecords(rows)
	if err != nil {
		return nil, p.wrap("namesakes", err)
	}
	if err := damaged.Err(); err != nil {
		return nil, err // a damaged namesake cannot be judged: say so
	}
	out := recs[:0]
	for _, r := range recs {
		if keystore.IsNamesake(r, name) {
			out = append(out, r)
		}
	}
	return out, nil
}

// Rebind implements keystore.Rebinder, in one transaction that locks the
// row: a record whose claim a live worker holds is not rebound
// (keystore.ErrClaimed), since that worker's writes name the record's
// old name and would be refused.
func (p *Store) Rebind(ctx context.Context, key, from string, b keystore.Binding) (*keystore.Record, error) {
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	if err := keystore.CheckRebind(ctx, key, from, b); err != nil {
		return nil, err
	}
	var out *keystore.Record
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		var claimed bool
		if err := tx.QueryRow(ctx, p.sql.rebindLock, key).Scan(&claimed); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("rebind: %w: %s", keystore.ErrNotFound, keystore.KeyRef(key))
			}
			return err
		}
		if claimed {
			return fmt.Errorf("rebind %s: %w", keystore.KeyRef(key), keystore.ErrClaimed)
		}
		old, err := scanPostgresRecord(tx.QueryRow(ctx, p.sql.getByKey, key))
		if err != nil {
			return err
		}
		if old.Name != from {
			return fmt.Errorf("rebind: %w: %s under name %q", keystore.ErrNotFound, keystore.KeyRef(key), from)
		}
		r := keystore.Rebound(old, b)
		if err := validatePostgresRecord(r); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, p.sql.rebind, postgresRecordArgs(r)...); err != nil {
			return err
		}
		out = storedPostgresRecord(r)
		return nil
	})
	var pgErr *pgconn.PgError
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &pgErr) && pgErr.Code == "23505":
		return nil, fmt.Errorf("rebind %s: %w: %q", keystore.KeyRef(key), keystore.ErrNameTaken, b.Name)
	case errors.Is(err, keystore.ErrNotFound), errors.Is(err, keystore.ErrClaimed), errors.Is(err, keystore.ErrCorrupt):
		return nil, err
	}
	return nil, p.fail("rebind", key, err)
}
