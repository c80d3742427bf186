package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	bolt "go.etcd.io/bbolt"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

// beginRequest is the request every benchmarked Begin turns into an
// intent; nothing is sent.
func beginRequest(b *testing.B) *http.Request {
	req, err := http.NewRequest(http.MethodPost, "https://api.example.com/v1/payments", bytes.NewReader(paymentBody))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

// openRawBolt opens a bare bbolt file with default options (fdatasync on
// commit) and one bucket, the floor idem's keystore is measured against.
func openRawBolt(b *testing.B) (*bolt.DB, []byte) {
	b.Helper()
	db, err := bolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	bucket := []byte("intents")
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
		b.Fatal(err)
	}
	return db, bucket
}

// floorRecord is what a raw bbolt floor writes: a pending record of the
// size Begin writes, JSON-encoded.
func floorRecord(b *testing.B) []byte {
	b.Helper()
	value, err := json.Marshal(keystore.Record{
		Key: uuid.NewString(), Method: http.MethodPost, URL: "https://api.example.com/v1/payments",
		Header: http.Header{"Content-Type": {"application/json"}}, Body: paymentBody,
		Fingerprint: idem.Fingerprint(http.MethodPost, "https://api.example.com/v1/payments", paymentBody),
		State:       keystore.Pending, CreatedAt: time.Now(), UpdatedAt: time.Now(),
	})
	if err != nil {
		b.Fatal(err)
	}
	return value
}

// BenchmarkBeginFloor compares one Begin on an idle bbolt keystore with
// its floor, one raw bbolt Update (default options, so fdatasync on
// commit) putting a record of the same size under a fresh UUID. Both
// write to the same disk; the ratio is what idem adds to a durable write.
func BenchmarkBeginFloor(b *testing.B) {
	ctx := context.Background()
	b.Run("op=bolt-update", func(b *testing.B) {
		db, bucket := openRawBolt(b)
		value := floorRecord(b)
		b.ReportAllocs()
		for b.Loop() {
			key := []byte(uuid.NewString())
			if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put(key, value) }); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("op=idem-begin-bbolt", func(b *testing.B) {
		c, err := idem.New(idem.WithBoltStore(filepath.Join(b.TempDir(), "keys.db"), nil))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close() })
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Begin(ctx, "", beginRequest(b)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBeginConcurrent is Begin throughput with 1, 8 and 64 callers
// at once on one client; ns/op is per intent and begins/s the throughput.
// On bbolt, concurrent Begins share commits (group commit), so throughput
// should grow with callers; the memory store is for reference.
func BenchmarkBeginConcurrent(b *testing.B) {
	bboltStore := func(b *testing.B) idem.Option {
		return idem.WithBoltStore(filepath.Join(b.TempDir(), "keys.db"), nil)
	}
	stores := []struct {
		name string
		opts func(b *testing.B) []idem.Option
	}{
		{"bbolt", func(b *testing.B) []idem.Option { return []idem.Option{bboltStore(b)} }},
		// Time-ordered keys. The log layout appends every new record
		// under a time-ordered id whatever its key, so they should scale
		// as the default UUIDv4 keys do; kept to show that they do.
		{"bbolt-keyv7", func(b *testing.B) []idem.Option {
			return []idem.Option{bboltStore(b), idem.WithKeyGenerator(idem.NewKeyV7)}
		}},
		{"memory", func(*testing.B) []idem.Option { return []idem.Option{idem.WithStore(keystore.NewMemory())} }},
	}
	for _, st := range stores {
		for _, callers := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("store=%s/callers=%d", st.name, callers), func(b *testing.B) {
				c, err := idem.New(st.opts(b)...)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = c.Close() })
				benchConcurrentBegin(b, c, callers)
			})
		}
	}
}

// BenchmarkBeginScaling is the 64-callers-over-1 ratio of Begin on
// bbolt, measured so that the disk's drift (other jobs' fsyncs) hits both
// sides alike: one op is a pair of phases on one client, scalingPhase of
// Begins from 1 caller, then scalingPhase from 64 callers. It reports the
// throughput of each side over all the phases and their ratio (x64/1),
// and the median and the spread of the per-pair ratios.
func BenchmarkBeginScaling(b *testing.B) {
	for _, keys := range []struct {
		name string
		gen  func() (string, error)
	}{{"v4", idem.NewKeyV4}, {"v7", idem.NewKeyV7}} {
		b.Run("store=bbolt/keys="+keys.name, func(b *testing.B) {
			c, err := idem.New(idem.WithBoltStore(filepath.Join(b.TempDir(), "keys.db"), nil), idem.WithKeyGenerator(keys.gen))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = c.Close() })
			var n1, n64 int
			var t1, t64 time.Duration
			var ratios []float64
			for b.Loop() {
				k1, d1 := beginPhase(b, c, 1, scalingPhase)
				k64, d64 := beginPhase(b, c, 64, scalingPhase)
				n1, t1, n64, t64 = n1+k1, t1+d1, n64+k64, t64+d64
				ratios = append(ratios, (float64(k64)/d64.Seconds())/(float64(k1)/d1.Seconds()))
			}
			r1, r64 := float64(n1)/t1.Seconds(), float64(n64)/t64.Seconds()
			b.ReportMetric(r1, "begins/s-1")
			b.ReportMetric(r64, "begins/s-64")
			b.ReportMetric(r64/r1, "x64/1")
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], "x64/1-median")
			b.ReportMetric(ratios[0], "x64/1-min")
			b.ReportMetric(ratios[len(ratios)-1], "x64/1-max")
		})
	}
}

// scalingPhase is the length of one side of a BenchmarkBeginScaling pair:
// long enough for some hundred commits, short enough that the disk's load
// changes little between the two sides.
const scalingPhase = 200 * time.Millisecond

// beginPhase runs Begins from callers goroutines on c for about d and
// returns how many were made and how long they took, until the last
// caller returned.
func beginPhase(b *testing.B, c *idem.Client, callers int, d time.Duration) (int, time.Duration) {
	ctx := context.Background()
	var n atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if _, err := c.Begin(ctx, "", beginRequest(b)); err != nil {
					b.Error(err)
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(n.Load()), time.Since(start)
}

func benchConcurrentBegin(b *testing.B, c *idem.Client, callers int) {
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, err := c.Begin(ctx, "", beginRequest(b)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "begins/s")
}

// BenchmarkBoltBatch is the ceiling group commit works against: raw bbolt
// transactions (default options, fdatasync on commit) putting 1 or 64
// records of a Begin's size, under random (UUIDv4) or time-ordered
// (UUIDv7) keys. One op is one record; records/s is the throughput. A
// commit of 64 random keys dirties about one leaf page per record, so it
// writes and syncs far more than a commit of one; time-ordered keys share
// leaf pages.
func BenchmarkBoltBatch(b *testing.B) {
	value := make([]byte, 700) // about the size of an encoded intent
	keyGens := []struct {
		name string
		gen  func() (string, error)
	}{{"v4", idem.NewKeyV4}, {"v7", idem.NewKeyV7}}
	for _, kg := range keyGens {
		for _, batch := range []int{1, 64} {
			b.Run(fmt.Sprintf("keys=%s/batch=%d", kg.name, batch), func(b *testing.B) {
				db, bucket := openRawBolt(b)
				b.ReportAllocs()
				start := time.Now()
				for done := 0; done < b.N; done += batch {
					err := db.Update(func(tx *bolt.Tx) error {
						for range min(batch, b.N-done) {
							key, err := kg.gen()
							if err != nil {
								return err
							}
							if err := tx.Bucket(bucket).Put([]byte(key), value); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
			})
		}
	}
}
