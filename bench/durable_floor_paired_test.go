package bench

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"github.com/idemkit/idem"
)

// BenchmarkCallDurableFloorPaired is BenchmarkCallDurableFloor's two ops
// alternated one by one in a single loop, their order swapped on every
// iteration and each timed on its own, so the host's drift and the
// disk's hits both alike: one raw bbolt Update (fdatasync on commit) of
// a record of the size Begin writes under a fresh UUID, then the POST
// with that UUID as its key (raw); and Begin then Do on the bbolt
// keystore (idem). Both files are on the same disk and both call the
// same in-process reference server. It reports idem's total time over
// raw's (idem/raw) and each op's mean (ns/raw, ns/idem); ns/op is one
// pair.
func BenchmarkCallDurableFloorPaired(b *testing.B) {
	srv := newPaymentServer(b)
	url := srv.URL + "/v1/payments"
	hc := srv.Client()
	db, bucket := openRawBolt(b)
	value := floorRecord(b)
	c, err := idem.New(idem.WithHTTPClient(hc), idem.WithBoltStore(filepath.Join(b.TempDir(), "keys.db"), nil))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	raw := func() {
		key := uuid.NewString()
		if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put([]byte(key), value) }); err != nil {
			b.Fatal(err)
		}
		req := newPaymentRequest(b, url)
		req.Header.Set("Idempotency-Key", key)
		resp, err := hc.Do(req)
		finish(b, resp, err)
	}
	withIdem := func() { beginAndDo(b, c, url) }
	ops := [...]func(){raw, withIdem}
	var total [len(ops)]time.Duration
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		for i := range ops {
			k := (i + n) % len(ops)
			t0 := time.Now()
			ops[k]()
			total[k] += time.Since(t0)
		}
		n++
	}
	if n == 0 || total[0] == 0 {
		return
	}
	b.ReportMetric(float64(total[1])/float64(total[0]), "idem/raw")
	b.ReportMetric(float64(total[0].Nanoseconds())/float64(n), "ns/raw")
	b.ReportMetric(float64(total[1].Nanoseconds())/float64(n), "ns/idem")
}
