package pgkeystore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/keystore"
)

var _ keystore.DamageRepairer = (*Store)(nil)

// rawRow is the statement that reads a row as stored: its columns as one
// JSON text (row_to_json), and its name column. lock adds FOR UPDATE.
func (p *Store) rawRow(lock bool) string {
	q := `SELECT row_to_json(r)::text, r.name FROM ` + p.sql.table + ` r WHERE r.key = $1`
	if lock {
		q += ` FOR UPDATE`
	}
	return q
}

// Damaged returns the damaged row stored under key: its columns as JSON
// and its name column (see keystore.DamageRepairer).
func (p *Store) Damaged(ctx context.Context, key string) (*keystore.DamagedRecord, error) {
	if err := p.checkOpen(); err != nil {
		return nil, err
	}
	var d *keystore.DamagedRecord
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		var err error
		d, err = p.damagedOn(ctx, tx, key, false)
		return err
	})
	if err != nil {
		return nil, p.damageError("damaged", key, err)
	}
	return d, nil
}

// damagedOn reads the damaged row under key on tx, locked for update
// when lock is set.
func (p *Store) damagedOn(ctx context.Context, tx pgx.Tx, key string, lock bool) (*keystore.DamagedRecord, error) {
	var raw string
	var name *string
	err := tx.QueryRow(ctx, p.rawRow(lock), key).Scan(&raw, &name)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", keystore.ErrNotFound, keystore.KeyRef(key))
	}
	if err != nil {
		return nil, err
	}
	_, why := scanPostgresRecord(tx.QueryRow(ctx, p.sql.getByKey, key))
	if why == nil {
		return nil, fmt.Errorf("%w: %s", keystore.ErrNotDamaged, keystore.KeyRef(key))
	}
	if !errors.Is(why, keystore.ErrCorrupt) {
		return nil, why
	}
	d := &keystore.DamagedRecord{Key: key, Raw: []byte(raw), Why: why}
	if name != nil {
		d.Name = *name
	}
	return d, nil
}

// ReplaceDamaged replaces the damaged row d by r in one transaction that
// holds the row locked from its check to its write (see
// keystore.DamageRepairer).
func (p *Store) ReplaceDamaged(ctx context.Context, d *keystore.DamagedRecord, r *keystore.Record) error {
	if err := p.checkWrite(ctx, "replace damaged", r); err != nil {
		return err
	}
	if d == nil || r.Key != d.Key || r.Name != d.Name {
		return errors.New("keystore: replace damaged: the replacement must keep the damaged record's key and name")
	}
	err := pgx.BeginFunc(ctx, p.pool, func(tx pgx.Tx) error {
		now, err := p.damagedOn(ctx, tx, d.Key, true)
		if err != nil {
			return err
		}
		if !bytes.Equal(now.Raw, d.Raw) || now.Name != d.Name {
			return fmt.Errorf("%w: %s", keystore.ErrDamageChanged, keystore.KeyRef(d.Key))
		}
		_, err = tx.Exec(ctx, p.sql.rebind, postgresRecordArgs(r)...)
		return err
	})
	return p.damageError("replace damaged", d.Key, err)
}

// damageError passes the keystore's own errors through and wraps the
// database's.
func (p *Store) damageError(op, key string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, keystore.ErrNotFound), errors.Is(err, keystore.ErrNotDamaged),
		errors.Is(err, keystore.ErrDamageChanged), errors.Is(err, keystore.ErrCorrupt):
		return err
	}
	return p.fail(op, key, err)
}
