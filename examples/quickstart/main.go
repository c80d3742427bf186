// Command quickstart makes one payment through idem against an in-process
// reference server, loses the first answer on purpose, and shows that the
// payment happened once and that a second Do replays it from the keystore.
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	// The reference server, on a free local port.
	srv, err := idemtest.Start()
	if err != nil {
		return err
	}
	defer srv.Close()
	baseURL := srv.URL

	// A durable keystore: the key is written here before the first attempt.
	dir, err := os.MkdirTemp("", "idem-quickstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	client, err := idem.New(idem.WithBoltStore(filepath.Join(dir, "intents.db"), nil))
	if err != nil {
		return err
	}
	defer client.Close()

	req, err := http.NewRequest(http.MethodPost, baseURL+"/v1/payments",
		strings.NewReader(`{"amount": 1000, "currency": "EUR", "reference": "order-42"}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer tok_quickstart")

	in, err := client.Begin(ctx, "order-42/payment", req)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "intent %q persisted with key %s\n", in.Name, in.Key)

	srv.LoseNextResponses(1)
	fmt.Fprintln(out, "server will drop the first answer after charging")

	resp, err := client.Do(ctx, in)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	fmt.Fprintf(out, "paid: %d after %d attempts (server replay: %v)\n  %s\n",
		resp.StatusCode, in.Attempts, idem.IsReplay(resp), strings.TrimSpace(string(body)))

	again, err := client.Do(ctx, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "second Do: %d replayed locally, no network (local replay: %v)\n",
		again.StatusCode, idem.IsLocalReplay(again))

	n := srv.PaymentCount()
	fmt.Fprintf(out, "payments on the server: %d\n", n)
	if n != 1 {
		return fmt.Errorf("expected exactly one payment, got %d", n)
	}
	return nil
}
