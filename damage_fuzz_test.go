package idem

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// sentRequest is what a server received.
type sentRequest struct {
	method, path string
	body         []byte
}

// FuzzDamagedRecordIsNeverSent damages the stored bytes of an intent in a
// real bbolt file (the flips, insertions and cuts the fuzzer chooses), then
// resumes it: either nothing is sent, or exactly the request Begin stored.
// A damaged record is reported (listing or Do fails, naming it), never
// sent as damaged.
func FuzzDamagedRecordIsNeverSent(f *testing.F) {
	f.Add(uint16(40), byte(0x01), uint8(0))
	f.Add(uint16(120), byte('9'), uint8(1))
	f.Add(uint16(7), byte(0), uint8(2))
	f.Add(uint16(300), byte('"'), uint8(0))
	f.Fuzz(func(t *testing.T, at uint16, b byte, op uint8) {
		var mu sync.Mutex
		var got []sentRequest
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			got = append(got, sentRequest{r.Method, r.URL.Path, body})
			mu.Unlock()
			w.WriteHeader(http.StatusCreated)
		}))
		defer srv.Close()
		path := filepath.Join(t.TempDir(), "intents.db")
		c, err := New(append(fastOptions(), WithBoltStore(path, nil))...)
		if err != nil {
			t.Fatal(err)
		}
		in, err := c.Begin(context.Background(), "", paymentRequest(t, srv.URL, 777, "fuzz"))
		if err != nil {
			t.Fatal(err)
		}
		rec, err := c.store.Get(context.Background(), in.Key)
		if err != nil {
			t.Fatal(err)
		}
		want := sentRequest{rec.Method, "/v1/payments", rec.Body}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		damage(t, path, in.Key, int(at), b, op)

		c2, err := New(append(fastOptions(), WithBoltStore(path, nil), WithRequestEditor(bearer(testToken)))...)
		if err != nil {
			return // a file that no longer opens is reported, and nothing is sent
		}
		defer c2.Close()
		pending, _ := c2.Pending(context.Background())
		for _, p := range pending {
			_, _ = c2.Do(context.Background(), p)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, s := range got {
			if s.method != want.method || s.path != want.path || !bytes.Equal(s.body, want.body) {
				t.Fatalf("a damaged record was sent: %s %s %q, stored %s %s %q", s.method, s.path, s.body, want.method, want.path, want.body)
			}
		}
	})
}

// damage changes the stored value of key in the bbolt file at path: op 0
// flips the byte at, 1 overwrites it with b, 2 cuts the value there.
func damage(t *testing.T, path, key string, at int, b byte, op uint8) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		bucket := tx.Bucket([]byte("records"))
		if bucket == nil {
			return nil
		}
		v := append([]byte(nil), bucket.Get([]byte(key))...)
		if len(v) == 0 {
			return nil
		}
		i := at % len(v)
		switch op % 3 {
		case 0:
			v[i] ^= 0x01 | b
		case 1:
			v[i] = b
		case 2:
			v = v[:i]
		}
		return bucket.Put([]byte(key), v)
	})
	if err != nil {
		t.Fatal(err)
	}
}
