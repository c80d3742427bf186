package bench

import (
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

// syncedStore hides the keystore's Deferrer (and Adopter), so the client
// settles with a durable Update: the two-fsync path.
type syncedStore struct{ keystore.Store }

// BenchmarkCallDurable is BenchmarkCall's idem-bbolt call (Begin then Do
// against the loopback reference server, fdatasync on) with the settle
// deferred into the next group commit (the default: one fsync per call)
// or synced on its own (two fsyncs per call). Sequential calls, so the
// deferred settle rides with the next call's Begin.
func BenchmarkCallDurable(b *testing.B) {
	srv := newPaymentServer(b)
	url := srv.URL + "/v1/payments"
	for _, mode := range []string{"deferred", "synced"} {
		b.Run("settle="+mode, func(b *testing.B) {
			s, err := keystore.OpenBolt(filepath.Join(b.TempDir(), "keys.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			var store keystore.Store = s
			if mode == "synced" {
				store = syncedStore{s}
			}
			c, err := idem.New(idem.WithHTTPClient(srv.Client()), idem.WithStore(store))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = c.Close(); _ = s.Close() })
			b.ReportAllocs()
			for b.Loop() {
				beginAndDo(b, c, url)
			}
		})
	}
}

// BenchmarkCallDurableFloor compares one durable idem call, Begin then Do
// on the bbolt keystore (fdatasync on), with its floor: one raw bbolt
// Update (default options, so fdatasync on commit) of a record of the
// same size under a fresh UUID, then the same POST through net/http with
// that UUID as its key. Both write to the same disk and call the same
// in-process reference server; the ratio is what idem adds to "write the
// key down durably, then send".
func BenchmarkCallDurableFloor(b *testing.B) {
	srv := newPaymentServer(b)
	url := srv.URL + "/v1/payments"
	hc := srv.Client()
	b.Run("op=bolt-update+post", func(b *testing.B) {
		db, bucket := openRawBolt(b)
		value := floorRecord(b)
		b.ReportAllocs()
		for b.Loop() {
			key := uuid.NewString()
			if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put([]byte(key), value) }); err != nil {
				b.Fatal(err)
			}
			req := newPaymentRequest(b, url)
			req.Header.Set("Idempotency-Key", key)
			resp, err := hc.Do(req)
			finish(b, resp, err)
		}
	})
	b.Run("op=idem-bbolt", func(b *testing.B) {
		runIdemCalls(b, hc, url, idem.WithBoltStore(filepath.Join(b.TempDir(), "keys.db"), nil))
	})
}
