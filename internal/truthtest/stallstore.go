package truthtest

import (
	"context"
	"time"

	"github.com/idemkit/idem/keystore"
)

// stallStore is a keystore whose writes stall, as a disk that blocks or a
// database behind a slow link does: every Create and Update waits stall
// first, whatever the context says.
type stallStore struct {
	keystore.Store
	stall time.Duration
}

func (s stallStore) Create(ctx context.Context, r *keystore.Record) (*keystore.Record, bool, error) {
	time.Sleep(s.stall)
	return s.Store.Create(ctx, r)
}

func (s stallStore) Update(ctx context.Context, r *keystore.Record) error {
	time.Sleep(s.stall)
	return s.Store.Update(ctx, r)
}

// Namesakes passes through: the stall is of writes, and a wrapper that hid
// the inner store's NameScanner would take from Begin what tells a
// refreshed credential from a new account.
func (s stallStore) Namesakes(ctx context.Context, name string, limit int) ([]*keystore.Record, error) {
	return s.Store.(keystore.NameScanner).Namesakes(ctx, name, limit)
}

// Rebind passes through, stalled as a write.
func (s stallStore) Rebind(ctx context.Context, key, from string, b keystore.Binding) (*keystore.Record, error) {
	time.Sleep(s.stall)
	return s.Store.(keystore.Rebinder).Rebind(ctx, key, from, b)
}
