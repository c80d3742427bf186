package pgstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemkit/idem/server"
)

// reserveAttempts bounds Reserve's loop. The loop only repeats when the
// record it lost to vanished before it could be read (released or swept
// in between), so more than a couple of rounds means something is wrong.
const reserveAttempts = 5

// execer is what a statement runs on: the pool or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// Reserve implements server.Store.
func (s *Store) Reserve(ctx context.Context, scope server.Scope, key, fingerprint string, lease time.Duration) (*server.Reservation, *server.Record, error) {
	if key == "" || fingerprint == "" {
		return nil, nil, errors.New("pgstore: reserve needs a key and a fingerprint")
	}
	if lease < time.Microsecond {
		return nil, nil, fmt.Errorf("pgstore: lease must be at least 1µs, got %v", lease)
	}
	if err := checkText("principal", scope.Principal, "method", scope.Method, "route", scope.Route,
		"key", key, "fingerprint", fingerprint); err != nil {
		return nil, nil, err
	}
	for range reserveAttempts {
		token := rand.Text()
		args := []any{scope.Principal, scope.Method, scope.Route, key, fingerprint, token, lease.Microseconds()}
		var reserved bool
		err := s.pool.QueryRow(ctx, s.q.reserve, args...).Scan(&reserved)
		if err == nil {
			return s.reserved(scope, key, fingerprint, token), nil, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, nil, fmt.Errorf("pgstore: reserve: %w", err)
		}
		// A record is there: try to take it over and read it, one round
		// trip for both.
		took, rec, err := s.takeOver(ctx, args, scope, key)
		switch {
		case err != nil:
			return nil, nil, fmt.Errorf("pgstore: reserve: %w", err)
		case took:
			return s.reserved(scope, key, fingerprint, token), nil, nil
		case rec != nil:
			return nil, rec, nil
		}
		// The record vanished in between (released or swept): insert again.
	}
	return nil, nil, fmt.Errorf("pgstore: reserve: the record kept changing under %d attempts", reserveAttempts)
}

func (s *Store) reserved(scope server.Scope, key, fingerprint, token string) *server.Reservation {
	s.logger.Debug("pgstore: key reserved", "key_hash", server.KeyHash(key))
	return &server.Reservation{Scope: scope, Key: key, Fingerprint: fingerprint, Token: token}
}

// takeOver sends the takeover of (scope, key) with reserve's args and
// the read of the record in one batch. It reports whether the takeover
// won; if not, the record as the read found it, nil when there is none.
func (s *Store) takeOver(ctx context.Context, args []any, scope server.Scope, key string) (bool, *server.Record, error) {
	b := &pgx.Batch{}
	b.Queue(s.q.takeover, args...)
	b.Queue(s.q.selectRecord, scope.Principal, scope.Method, scope.Route, key)
	br := s.pool.SendBatch(ctx, b)
	var took bool
	err := br.QueryRow().Scan(&took)
	var rec *server.Record
	if errors.Is(err, pgx.ErrNoRows) {
		if rec, err = scanRecord(br.QueryRow(), scope, key); errors.Is(err, pgx.ErrNoRows) {
			rec, err = nil, nil
		}
	}
	if closeErr := br.Close(); err == nil && closeErr != nil {
		err = closeErr
	}
	if err != nil {
		return false, nil, fmt.Errorf("take over or read the existing record: %w", err)
	}
	return took, rec, nil
}

// scanRecord reads the record of (scope, key) from row, a result of
// selectRecord; pgx.ErrNoRows when there is none.
func scanRecord(row pgx.Row, scope server.Scope, key string) (*server.Record, error) {
	var (
		state          string
		token, rid     *string
		lease, expires *time.Time
		status         *int32
		header, body   []byte
	)
	rec := &server.Record{Scope: scope, Key: key}
	err := row.Scan(&rec.Fingerprint, &state, &token, &lease, &status, &header, &body, &rid, &rec.CreatedAt, &expires)
	if err != nil {
		return nil, err
	}
	rec.State = server.RecordState(state)
	rec.Token = deref(token)
	rec.LeaseExpires = deref(lease)
	rec.ExpiresAt = deref(expires)
	if status != nil {
		resp := &server.Response{Status: int(*status), Body: body, ResourceID: deref(rid)}
		if resp.Header, err = server.DecodeHeader(header); err != nil {
			return nil, err
		}
		rec.Response = resp
	}
	return rec, nil
}

// Complete implements server.Store.
func (s *Store) Complete(ctx context.Context, c server.Completion) error {
	if err := s.complete(ctx, s.pool, c); err != nil {
		return fmt.Errorf("pgstore: complete: %w", err)
	}
	return nil
}

// complete is the compare-and-set that turns c's reservation into a
// completed record, on the pool or inside a caller's transaction.
func (s *Store) complete(ctx context.Context, db execer, c server.Completion) error {
	args, err := completionArgs(c)
	if err != nil {
		return err
	}
	tag, err := db.Exec(ctx, s.q.complete, args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		s.logger.Info("pgstore: stale owner fenced on complete", "key_hash", server.KeyHash(c.Reservation.Key))
		return server.ErrFenced
	}
	return nil
}

// completionArgs checks c and returns the arguments of the complete
// statements: the record's scope and key, the token, then the response
// and the retention.
func completionArgs(c server.Completion) ([]any, error) {
	// Timestamps are microseconds in PostgreSQL.
	if err := server.ValidateCompletion(c, time.Microsecond); err != nil {
		return nil, err
	}
	if err := checkText("resource id", c.Response.ResourceID); err != nil {
		return nil, err
	}
	header, err := server.EncodeHeader(c.Response.Header)
	if err != nil {
		return nil, err
	}
	r := c.Reservation
	return []any{r.Scope.Principal, r.Scope.Method, r.Scope.Route, r.Key, r.Token,
		c.Response.Status, header, nonNil(c.Response.Body), c.Response.ResourceID, c.Retention.Microseconds()}, nil
}

// Release implements server.Store.
func (s *Store) Release(ctx context.Context, r server.Reservation) error {
	tag, err := s.pool.Exec(ctx, s.q.release, r.Scope.Principal, r.Scope.Method, r.Scope.Route, r.Key, r.Token)
	if err != nil {
		return fmt.Errorf("pgstore: release: %w", err)
	}
	if tag.RowsAffected() == 0 {
		s.logger.Info("pgstore: stale owner fenced on release", "key_hash", server.KeyHash(r.Key))
		return fmt.Errorf("pgstore: release: %w", server.ErrFenced)
	}
	return nil
}

// Sweep implements server.Store: it deletes at most limit records in
// one statement, completed records past their retention (oldest expiry
// first), then reservations whose lease ended more than the reservation
// grace ago (oldest lease first), both judged by the database clock. Call
// it in a loop until it returns fewer than limit to drain a backlog
// without holding long locks.
func (s *Store) Sweep(ctx context.Context, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("pgstore: sweep limit must be positive, got %d", limit)
	}
	tag, err := s.pool.Exec(ctx, s.q.sweep, limit, s.grace.Microseconds())
	if err != nil {
		return 0, fmt.Errorf("pgstore: sweep: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// deref returns *p, or the zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// nonNil keeps an empty body an empty bytea rather than NULL.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
