package keystore

import "context"

// Adopter is implemented by stores that can keep a record their caller
// built for them instead of a copy of it (Memory does). A caller that
// builds a fresh record, hands it over and never modifies it afterwards
// saves the deep copies Create and Update otherwise make to protect the
// store from later changes by the caller.
//
// Ownership: once AdoptCreate or AdoptUpdate is called, r and every map
// and slice it references (Header and its values, Body, Response and its
// Header and Body, Reconciliations) belong to the store, whatever the outcome. The caller
// may keep reading them: a store never modifies a record it holds, it
// replaces it. Records the store hands out (Get, List, an existing record
// of AdoptCreate) are copies, as with Create.
type Adopter interface {
	// AdoptCreate is Create that takes ownership of r. When it creates
	// the record, existing is r itself.
	AdoptCreate(ctx context.Context, r *Record) (existing *Record, created bool, err error)
	// AdoptUpdate is Update that takes ownership of r.
	AdoptUpdate(ctx context.Context, r *Record) error
}
