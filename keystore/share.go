package keystore

import "context"

// Sharer is offered by stores that can hand out the record they hold
// instead of a copy of it. A caller that only reads a record, or copies
// it before changing it, saves the copy Get makes.
//
// Use it through a type assertion:
//
//	if s, ok := store.(keystore.Sharer); ok { rec, err = s.GetShared(ctx, key) }
type Sharer interface {
	// GetShared is Get, except that the record it returns may be the one
	// the store holds: the caller must not modify it, neither its fields
	// nor anything they point to (a shallow copy may have its fields
	// assigned). It may be the very record an AdoptCreate handed over,
	// for as long as no write has replaced it; otherwise it is a copy no
	// one else holds.
	GetShared(ctx context.Context, key string) (*Record, error)
}
