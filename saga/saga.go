package saga

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

// Saga runs sagas on an idem client: their steps are the client's
// intents, and their decision records live in the client's keystore. It
// is safe for concurrent use; each Run is driven by one goroutine.
type Saga struct {
	client *idem.Client
	runs   keystore.RunKeeper
	scope  string
	secret []byte
	now    func() time.Time
}

// Option configures a Saga.
type Option func(*Saga) error

// WithScope puts scope (a tenant, an account) into every derived key
// (DeriveStepKey), so two tenants' runs of the same id never share a key
// at a provider that does not scope keys by caller, and keeps the runs of
// each scope apart in the keystore (stored as scope@id; List shows a
// Saga the runs of its own scope). Every process that resumes a run must
// give the same scope. A scope is 1 to 128 bytes of [A-Za-z0-9._:-].
func WithScope(scope string) Option {
	return func(s *Saga) error {
		if err := checkID("scope", scope); err != nil {
			return err
		}
		s.scope = scope
		return nil
	}
}

// MinKeySecretLen is the shortest secret WithKeySecret takes.
const MinKeySecretLen = 16

// WithKeySecret keys the derivation of step keys (DeriveStepKey) with
// secret, so they cannot be guessed from the run id and step name. Keep
// it outside the keystore (the keys must survive its loss), and never
// change it while runs are open: a resume with another secret derives
// other keys, refused as a conflict.
func WithKeySecret(secret []byte) Option {
	return func(s *Saga) error {
		if len(secret) < MinKeySecretLen {
			return fmt.Errorf("%w: WithKeySecret: the secret must be at least %d bytes", ErrInvalid, MinKeySecretLen)
		}
		s.secret = append([]byte(nil), secret...)
		return nil
	}
}

// New builds a Saga on client, whose keystore must keep runs
// (keystore.RunKeeper: the bbolt, memory and Postgres keystores do).
func New(client *idem.Client, opts ...Option) (*Saga, error) {
	store := client.Keystore()
	if store == nil {
		return nil, idem.ErrClientNotOpen
	}
	rk, ok := store.(keystore.RunKeeper)
	if !ok {
		return nil, fmt.Errorf("%w: %T", ErrNoRunKeeper, store)
	}
	s := &Saga{client: client, runs: rk, now: time.Now}
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// stepKey is the derived key of a step or of its compensation.
func (s *Saga) stepKey(runID, step string, compensation bool) string {
	return DeriveStepKey(s.secret, s.scope, runID, step, compensation)
}

// Run starts the run with this id, or takes up the one the keystore
// holds (in whatever state: see Run.State), so the same code runs a saga
// the first time and after a crash. The first write of a new run is
// durable before Run returns.
func (s *Saga) Run(ctx context.Context, id string) (*Run, error) {
	if err := checkID("run id", id); err != nil {
		return nil, err
	}
	r, err := s.load(ctx, id)
	if !errors.Is(err, ErrRunNotFound) {
		return r, err
	}
	now := s.now().UTC()
	rec := &keystore.Run{ID: storedRunID(s.scope, id), Version: 1, State: string(Running), Data: []byte("{}"), CreatedAt: now, UpdatedAt: now}
	err = s.runs.PutRun(ctx, rec)
	if errors.Is(err, keystore.ErrRunVersion) {
		return s.load(ctx, id) // created meanwhile by another caller
	}
	if err != nil {
		return nil, fmt.Errorf("saga: storing run %q: %w", id, err)
	}
	return newRun(s, id, rec, runData{}), nil
}

// Resume takes up the run with this id as the keystore holds it;
// ErrRunNotFound when there is none.
func (s *Saga) Resume(ctx context.Context, id string) (*Run, error) {
	if err := checkID("run id", id); err != nil {
		return nil, err
	}
	return s.load(ctx, id)
}

// load reads the run with id.
func (s *Saga) load(ctx context.Context, id string) (*Run, error) {
	rec, err := s.runs.GetRun(ctx, storedRunID(s.scope, id))
	if errors.Is(err, keystore.ErrNotFound) {
		return nil, fmt.Errorf("%w: %q", ErrRunNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("saga: loading run %q: %w", id, err)
	}
	d, err := decodeRun(rec)
	if err != nil {
		return nil, err
	}
	return newRun(s, id, rec, d), nil
}
