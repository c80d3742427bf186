package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/idemkit/idem/server"
)

// A payments handler behind the layer: the retry is answered from the
// store and the handler runs once.
func Example() {
	store := server.NewMemoryStore()
	defer store.Close()
	idem, err := server.New(store, server.WithPrincipalSecret([]byte("keep this secret")))
	if err != nil {
		panic(err)
	}
	runs := 0
	mux := http.NewServeMux()
	mux.HandleFunc("POST /payments", func(w http.ResponseWriter, r *http.Request) {
		runs++
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":"pay_%d"}`, runs)
	})
	api := httptest.NewServer(idem.Handler(mux))
	defer api.Close()

	for range 2 {
		req, _ := http.NewRequest(http.MethodPost, api.URL+"/payments", strings.NewReader(`{"amount":1000}`))
		req.Header.Set("Authorization", "Bearer sk_test_1")
		req.Header.Set("Idempotency-Key", "order-42")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, "replayed:", resp.Header.Get("Idempotent-Replayed") == "true")
	}
	fmt.Println("handler runs:", runs)
	// Output:
	// 201 replayed: false
	// 201 replayed: true
	// handler runs: 1
}

// A queue consumer: the second delivery of message m-1 returns the first
// result and does not charge again.
func ExampleOnce() {
	store := server.NewMemoryStore()
	defer store.Close()
	scope := server.Scope{Principal: "billing", Method: "CONSUME", Route: "orders.paid"}
	payload := []byte(`{"order":42}`)
	fingerprint := server.Fingerprint("CONSUME", "orders.paid", payload)
	charges := 0
	for range 2 {
		result, err := server.Once(context.Background(), store, scope, "m-1", fingerprint, func(ctx context.Context) ([]byte, error) {
			charges++
			return []byte("charged"), nil
		})
		fmt.Println(string(result), err)
	}
	fmt.Println("charges:", charges)
	// Output:
	// charged <nil>
	// charged <nil>
	// charges: 1
}
