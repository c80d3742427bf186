package dialect

import (
	"errors"
	"testing"
)

// Any body either has no place for a key (ErrNoKeyPlace) or gets one that
// SplitGraphQLKey reads back, leaving the body as it was; nothing panics.
func FuzzGraphQLKeyRoundTrip(f *testing.F) {
	f.Add([]byte(adjustBody), "k-1")
	f.Add([]byte(`{"query":"mutation{a(x:\"\\u00e9)\"){b}}"}`), `q"\`)
	f.Add([]byte(`{"query":"mutation { a }","query2":1}`), "k")
	f.Add([]byte(`{"query":"mutation { a @idempotent(key: \"x\") { b } }"}`), "k")
	f.Fuzz(func(t *testing.T, body []byte, key string) {
		if Shopify().CheckKey(key) != nil {
			return
		}
		key0, rest0, found, err := SplitGraphQLKey(body)
		if err != nil {
			if !errors.Is(err, ErrNoKeyPlace) {
				t.Fatalf("SplitGraphQLKey error %v does not match ErrNoKeyPlace", err)
			}
			return
		}
		if found {
			if key0 == "" && len(rest0) == 0 {
				t.Fatal("found a key and no body")
			}
			return
		}
		out, err := PlaceGraphQLKey(body, key)
		if err != nil {
			if !errors.Is(err, ErrNoKeyPlace) {
				t.Fatalf("PlaceGraphQLKey error %v does not match ErrNoKeyPlace", err)
			}
			return
		}
		got, rest, found, err := SplitGraphQLKey(out)
		if err != nil || !found || got != key || string(rest) != string(body) {
			t.Fatalf("round trip of %q with %q: %q %v %v, rest %q", body, key, got, found, err, rest)
		}
	})
}
