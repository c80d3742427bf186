package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/idemkit/idem/server"
)

// A payments handler behind the layer: the retry, under a renewed token
// of the same account, is answered from the store and the handler runs
// once.
func Example() {
	store := server.NewMemoryStore()
	defer store.Close()
	// Callers are accounts, put in the context by the API's own
	// authentication (here: a fixed API key per account).
	idem, err := server.New(store, server.WithPrincipal(server.AccountFromContext(accountKey{})))
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
	api := httptest.NewServer(authenticate(idem.Handler(mux)))
	defer api.Close()

	// The retry carries the account's renewed token.
	for _, token := range []string{"sk_test_1", "sk_test_1_renewed"} {
		req, _ := http.NewRequest(http.MethodPost, api.URL+"/payments", strings.NewReader(`{"amount":1000}`))
		req.Header.Set("Authorization", "Bearer "+token)
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

// accountKey is the context key of the caller's account.
type accountKey struct{}

// authenticate stands for the API's own authentication: it finds the
// caller's account and puts it in the context, before the idempotency
// layer runs. Every token of an account names the same account, so a
// retry under a renewed token is still replayed.
func authenticate(next http.Handler) http.Handler {
	accounts := map[string]string{"Bearer sk_test_1": "acct_1", "Bearer sk_test_1_renewed": "acct_1"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		account, ok := accounts[r.Header.Get("Authorization")]
		if !ok {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), accountKey{}, account)))
	})
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
