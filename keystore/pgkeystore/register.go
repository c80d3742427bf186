package pgkeystore

import (
	"context"

	"github.com/idemkit/idem/keystore"
)

// Importing this package registers its opener for postgres:// and
// postgresql:// URLs, so keystore.Open and idem.WithKeystore open them.
func init() {
	keystore.RegisterOpener("postgres", openLocation)
	keystore.RegisterOpener("postgresql", openLocation)
}

// optionsKey is the key under which WithOptions hands its Options to
// openLocation.
type optionsKey struct{}

// WithOptions applies opts when keystore.Open (or idem.WithKeystore)
// opens a Postgres keystore; other locations ignore it.
//
//	idem.WithKeystore(ctx, dsn, pgkeystore.WithOptions(&pgkeystore.Options{Schema: "payments"}))
func WithOptions(opts *Options) keystore.OpenOption {
	return keystore.WithOpenerSetting(optionsKey{}, opts)
}

// openLocation is the keystore.Opener of Postgres URLs.
func openLocation(ctx context.Context, location string, settings keystore.OpenerSettings) (keystore.Store, error) {
	opts, _ := settings.Value(optionsKey{}).(*Options)
	st, err := Open(ctx, location, opts)
	if err != nil {
		return nil, err
	}
	return st, nil
}
