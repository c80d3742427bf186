package idem

import (
	"context"
	"fmt"

	"github.com/idemkit/idem/keystore"
)

// WithKeystore opens the keystore at location with keystore.Open and uses
// it: a file path opens (or creates) a bbolt keystore for one process, a
// postgres:// URL a keystore that a fleet of workers shares. ctx bounds
// only the opening. The Client owns the store and Close closes it; a store
// set by an earlier option is closed and replaced.
//
// With a shared keystore, Do claims each intent before sending it (see
// ErrIntentBusy and WithClaimLease), and ClaimPending hands each worker
// intents no other worker holds. The Postgres keystore is a package of its
// own, so that the client carries no Postgres driver; a program that opens
// postgres:// URLs imports it (without it, opening one fails with
// keystore.ErrNoOpener naming that import):
//
//	import _ "github.com/idemkit/idem/keystore/pgkeystore"
//
//	client, err := idem.New(idem.WithKeystore(ctx, os.Getenv("IDEM_KEYSTORE")))
//
// Prefer it when the location is configuration: one setting picks a bbolt
// file or Postgres. A program that always uses a local file is clearer
// with WithBoltStore (typed options); WithStore takes a store the program
// opened itself.
func WithKeystore(ctx context.Context, location string, opts ...keystore.OpenOption) Option {
	return func(c *config) error {
		st, err := keystore.Open(ctx, location, opts...)
		if err != nil {
			return fmt.Errorf("idem: opening keystore: %w", err)
		}
		c.setStore(st)
		return nil
	}
}
