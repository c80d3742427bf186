package idem_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

// exampleDir is a fresh directory for an example's keystore file; the
// returned function removes it.
func exampleDir() (string, func()) {
	dir, err := os.MkdirTemp("", "idem-example-")
	if err != nil {
		panic(err)
	}
	return dir, func() { os.RemoveAll(dir) }
}

// The durable keystore: an intent is written to a bbolt file before its
// first byte is sent, and its outcome stays there after the process has
// closed the file.
func ExampleWithBoltStore() {
	srv := startExampleServer()
	defer srv.Close()
	dir, cleanup := exampleDir()
	defer cleanup()
	path := filepath.Join(dir, "intents.db")
	ctx := context.Background()

	client, err := idem.New(idem.WithBoltStore(path, nil))
	if err != nil {
		panic(err)
	}
	in, err := client.Begin(ctx, "order-42/payment", newPayment(srv.URL))
	if err != nil {
		panic(err)
	}
	resp, err := client.Do(ctx, in)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("paid:", resp.StatusCode)
	client.Close()

	// Another process, later: open the same file and read the record.
	st, err := keystore.OpenBolt(path, nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()
	rec, err := st.Get(ctx, in.Key)
	if err != nil {
		panic(err)
	}
	fmt.Println("name:", keystore.BusinessName(rec.Name, rec.Principal))
	fmt.Println("state:", rec.State, "attempts:", rec.Attempts, "answer:", rec.Response.Status)
	fmt.Println("credentials stored:", rec.Header.Get("Authorization") != "")
	// Output:
	// paid: 201
	// name: order-42/payment
	// state: succeeded attempts: 1 answer: 201
	// credentials stored: false
}

// Resuming after a restart: the first run's payment is made on the
// server but its answer is lost, so the run ends with the intent pending.
// The next run opens the same keystore, finds the intent with Pending and
// sends it again with its key; the server replays the payment it made.
func ExampleClient_Pending() {
	srv := startExampleServer()
	defer srv.Close()
	dir, cleanup := exampleDir()
	defer cleanup()
	path := filepath.Join(dir, "intents.db")
	ctx := context.Background()

	// First run: one attempt, whose answer never arrives.
	first, err := idem.New(idem.WithBoltStore(path, nil), idem.WithMaxAttempts(1))
	if err != nil {
		panic(err)
	}
	in, err := first.Begin(ctx, "order-42/payment", newPayment(srv.URL))
	if err != nil {
		panic(err)
	}
	srv.LoseNextResponses(1)
	_, err = first.Do(ctx, in)
	fmt.Println("first run, outcome unknown:", errors.Is(err, idem.ErrOutcomeUnknown))
	first.Close() // the process ends here

	// Next run: the keystore never holds credentials, so they are added
	// to every attempt again.
	next, err := idem.New(idem.WithBoltStore(path, nil),
		idem.WithRequestEditor(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer tok_example")
			return nil
		}))
	if err != nil {
		panic(err)
	}
	defer next.Close()
	pending, err := next.Pending(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("pending:", len(pending), "same key:", pending[0].Key == in.Key)
	resp, err := next.Do(ctx, pending[0])
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("resumed:", resp.StatusCode, pending[0].State, "server replay:", idem.IsReplay(resp))
	fmt.Println("payments on the server:", srv.PaymentCount())
	// Output:
	// first run, outcome unknown: true
	// pending: 1 same key: true
	// resumed: 201 succeeded server replay: true
	// payments on the server: 1
}

// A crash between Begin and Do: the intent and its key were persisted,
// nothing was sent. After the restart Resume finds the intent by its key
// (saved by the program, or from Pending) and Do sends it for the first
// time, with the key it was born with.
func ExampleClient_Resume() {
	srv := startExampleServer()
	defer srv.Close()
	dir, cleanup := exampleDir()
	defer cleanup()
	path := filepath.Join(dir, "intents.db")
	ctx := context.Background()

	first, err := idem.New(idem.WithBoltStore(path, nil))
	if err != nil {
		panic(err)
	}
	in, err := first.Begin(ctx, "order-42/payment", newPayment(srv.URL))
	if err != nil {
		panic(err)
	}
	key := in.Key
	first.Close() // the process dies before Do

	next, err := idem.New(idem.WithBoltStore(path, nil),
		idem.WithRequestEditor(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer tok_example")
			return nil
		}))
	if err != nil {
		panic(err)
	}
	defer next.Close()
	resumed, err := next.Resume(ctx, key)
	if err != nil {
		panic(err)
	}
	fmt.Println("resumed:", resumed.Name, resumed.State)
	resp, err := next.Do(ctx, resumed)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("paid:", resp.StatusCode, "replay:", idem.IsReplay(resp), "key kept:", resumed.Key == key)
	fmt.Println("payments on the server:", srv.PaymentCount())
	// Output:
	// resumed: order-42/payment pending
	// paid: 201 replay: false key kept: true
	// payments on the server: 1
}
