package pgkeystore_test

import (
	"context"
	"log"
	"os"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore/pgkeystore"
)

// A fleet's workers share one keystore in Postgres: importing this
// package lets idem.WithKeystore open the postgres:// URL, and
// WithOptions names the table.
func ExampleWithOptions() {
	ctx := context.Background()
	client, err := idem.New(idem.WithKeystore(ctx, os.Getenv("IDEM_KEYSTORE"),
		pgkeystore.WithOptions(&pgkeystore.Options{Schema: "payments", Table: "intents"})))
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
}
