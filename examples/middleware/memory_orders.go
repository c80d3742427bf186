package main

import (
	"context"
	"slices"
	"sync"

	"github.com/idemkit/idem/server"
)

// memoryOrders keeps orders in process memory beside the keys of a
// server.MemoryStore, inserting each inside the store's CompleteFunc.
type memoryOrders struct {
	keys *server.MemoryStore
	mu   sync.Mutex
	by   map[string][]Order // principal → orders
}

func newMemoryOrders(keys *server.MemoryStore) *memoryOrders {
	return &memoryOrders{keys: keys, by: make(map[string][]Order)}
}

func (m *memoryOrders) create(ctx context.Context, principal string, o Order, c server.Completion) error {
	return m.keys.CompleteFunc(ctx, c, func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.by[principal] = append(m.by[principal], o)
		return nil
	})
}

func (m *memoryOrders) list(_ context.Context, principal string) ([]Order, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.by[principal]), nil
}
