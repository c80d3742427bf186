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
