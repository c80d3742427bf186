package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/server/redisstore"
)

// CreatePayment implements testserver.Store: the payment and, with c
// non-nil, the key's completion are written by one script.
func (s *Store) CreatePayment(ctx context.Context, p testserver.Payment, c *testserver.Completion) error {
	if p.ID == "" {
		return errors.New("redisstore: payment needs an id")
	}
	created, err := p.Created.MarshalText()
	if err != nil {
		return fmt.Errorf("redisstore: create payment: %w", err)
	}
	keys := []string{s.keys.payment(p.Principal, p.ID), s.keys.payments(p.Principal), s.keys.paymentCount(p.Principal)}
	args := []any{p.ID, p.Principal, p.Amount, p.Currency, p.Reference, p.Status, created, p.Created.UnixMicro()}
	err = s.runEffect(ctx, s.effects.createPayment, keys, args, c)
	if err != nil {
		return fmt.Errorf("redisstore: create payment %q: %w", p.ID, err)
	}
	return nil
}

// CreateOperation implements testserver.Store like CreatePayment.
func (s *Store) CreateOperation(ctx context.Context, op testserver.Operation, c *testserver.Completion) error {
	if op.ID == "" {
		return errors.New("redisstore: operation needs an id")
	}
	created, err := op.Created.MarshalText()
	if err != nil {
		return fmt.Errorf("redisstore: create operation: %w", err)
	}
	settle, err := op.SettleAt.MarshalText()
	if err != nil {
		return fmt.Errorf("redisstore: create operation: %w", err)
	}
	keys := []string{s.keys.operation(op.Principal, op.ID)}
	args := []any{op.ID, op.Principal, op.Kind, op.Amount, op.Currency, op.Reference, created, settle}
	err = s.runEffect(ctx, s.effects.createOperation, keys, args, c)
	if err != nil {
		return fmt.Errorf("redisstore: create operation %q: %w", op.ID, err)
	}
	return nil
}

// effects are the payments API's writes, each committed with a key's
// completion by CommitEffect.
type effects struct{ createPayment, createOperation *redisstore.Effect }

// createPayment: KEYS payment, principal's index, payment count; ARGV id,
// principal, amount, currency, reference, status, created, index score.
// createOperation: KEYS operation; ARGV id, principal, kind, amount,
// currency, reference, created, settle at.
func newEffects() effects {
	return effects{
		createPayment: redisstore.NewEffect(
			`if redis.call('EXISTS', KEYS[1]) == 1 then return 'duplicate' end`, `
local seq = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'principal', ARGV[2], 'amount', ARGV[3],
	'currency', ARGV[4], 'reference', ARGV[5], 'status', ARGV[6], 'created', ARGV[7])
redis.call('ZADD', KEYS[2], ARGV[8], string.format('%020d', seq) .. ':' .. ARGV[1])`),
		createOperation: redisstore.NewEffect(
			`if redis.call('EXISTS', KEYS[1]) == 1 then return 'duplicate' end`, `
redis.call('HSET', KEYS[1], 'id', ARGV[1], 'principal', ARGV[2], 'kind', ARGV[3], 'amount', ARGV[4],
	'currency', ARGV[5], 'reference', ARGV[6], 'created', ARGV[7], 'settle_at', ARGV[8])`),
	}
}

// runEffect commits e with c and maps a duplicate to a readable error.
func (s *Store) runEffect(ctx context.Context, e *redisstore.Effect, keys []string, args []any, c *testserver.Completion) error {
	err := s.CommitEffect(ctx, e, c, keys, args...)
	if errors.Is(err, redisstore.ErrEffectRefused) {
		return errors.New("already exists")
	}
	return err
}

// GetPayment implements testserver.Store.
func (s *Store) GetPayment(ctx context.Context, principal, id string) (testserver.Payment, error) {
	f, err := s.client.HGetAll(ctx, s.keys.payment(principal, id)).Result()
	if err != nil {
		return testserver.Payment{}, fmt.Errorf("redisstore: get payment: %w", err)
	}
	if len(f) == 0 {
		return testserver.Payment{}, testserver.ErrNotFound
	}
	p, err := parsePayment(f)
	if err != nil {
		return testserver.Payment{}, fmt.Errorf("redisstore: get payment: %w", err)
	}
	return p, nil
}

// ListPayments implements testserver.Store: newest first, and payments
// created at the same instant newest insertion first, as the index's
// members start with a zero-padded insertion number.
func (s *Store) ListPayments(ctx context.Context, principal string) ([]testserver.Payment, error) {
	members, err := s.client.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.keys.payments(principal), Start: 0, Stop: -1, Rev: true}).Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: list payments: %w", err)
	}
	pipe := s.client.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(members))
	for i, m := range members {
		_, id, _ := strings.Cut(m, ":")
		cmds[i] = pipe.HGetAll(ctx, s.keys.payment(principal, id))
	}
	if len(members) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("redisstore: list payments: %w", err)
		}
	}
	out := make([]testserver.Payment, 0, len(members))
	for _, cmd := range cmds {
		p, err := parsePayment(cmd.Val())
		if err != nil {
			return nil, fmt.Errorf("redisstore: list payments: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// CountPayments implements testserver.Store: the sum of every key
// group's counter, read in one pipeline (one GET per key, as Redis
// Cluster needs).
func (s *Store) CountPayments(ctx context.Context) (int, error) {
	counters := s.keys.paymentCounts()
	pipe := s.client.Pipeline()
	cmds := make([]*redis.StringCmd, len(counters))
	for i, key := range counters {
		cmds[i] = pipe.Get(ctx, key)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("redisstore: count payments: %w", err)
	}
	total := 0
	for _, cmd := range cmds {
		n, err := cmd.Int()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("redisstore: count payments: %w", err)
		}
		total += n
	}
	return total, nil
}

// GetOperation implements testserver.Store.
func (s *Store) GetOperation(ctx context.Context, principal, id string) (testserver.Operation, error) {
	f, err := s.client.HGetAll(ctx, s.keys.operation(principal, id)).Result()
	if err != nil {
		return testserver.Operation{}, fmt.Errorf("redisstore: get operation: %w", err)
	}
	if len(f) == 0 {
		return testserver.Operation{}, testserver.ErrNotFound
	}
	op := testserver.Operation{ID: f["id"], Principal: f["principal"], Kind: f["kind"], Currency: f["currency"], Reference: f["reference"]}
	if op.Amount, err = strconv.ParseInt(f["amount"], 10, 64); err != nil {
		return testserver.Operation{}, fmt.Errorf("redisstore: get operation: stored amount: %w", err)
	}
	if op.Created, err = parseTime(f["created"]); err != nil {
		return testserver.Operation{}, fmt.Errorf("redisstore: get operation: stored creation time: %w", err)
	}
	if op.SettleAt, err = parseTime(f["settle_at"]); err != nil {
		return testserver.Operation{}, fmt.Errorf("redisstore: get operation: stored settle time: %w", err)
	}
	return op, nil
}

// parsePayment builds a payment from its hash.
func parsePayment(f map[string]string) (testserver.Payment, error) {
	if len(f) == 0 {
		return testserver.Payment{}, errors.New("a listed payment is missing")
	}
	p := testserver.Payment{ID: f["id"], Principal: f["principal"], Currency: f["currency"], Reference: f["reference"], Status: f["status"]}
	var err error
	if p.Amount, err = strconv.ParseInt(f["amount"], 10, 64); err != nil {
		return testserver.Payment{}, fmt.Errorf("stored amount: %w", err)
	}
	if p.Created, err = parseTime(f["created"]); err != nil {
		return testserver.Payment{}, fmt.Errorf("stored creation time: %w", err)
	}
	return p, nil
}

func parseTime(s string) (time.Time, error) {
	var t time.Time
	err := t.UnmarshalText([]byte(s))
	return t, err
}
