package keystore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/idemkit/idem/keystore"
)

// benchRecord is a typical intent: a small JSON payment request.
func benchRecord(i int64) *keystore.Record {
	now := time.Now()
	return &keystore.Record{
		Key:         fmt.Sprintf("0b6f1c1e-8c4a-4f7e-9d2a-%012d", i),
		Name:        fmt.Sprintf("order-%d", i),
		Method:      "POST",
		URL:         "https://api.example.com/v1/payments",
		Header:      map[string][]string{"Content-Type": {"application/json"}},
		Body:        []byte(`{"amount":1000,"currency":"EUR","reference":"invoice-2025-0001"}`),
		Fingerprint: "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		State:       keystore.Pending,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
}

func openBenchBolt(b *testing.B) *keystore.Bolt {
	b.Helper()
	s, err := keystore.OpenBolt(filepath.Join(b.TempDir(), "keys.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// BenchmarkBolt compares one Create on an idle store with its floor: one
// raw bbolt Update putting a record of the same size into a fresh file.
// Both commit with fdatasync.
func BenchmarkBolt(b *testing.B) {
	ctx := context.Background()
	b.Run("lone-create", func(b *testing.B) {
		s := openBenchBolt(b)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, _, err := s.Create(ctx, benchRecord(int64(i))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw-update", func(b *testing.B) {
		db, err := bolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = db.Close() })
		bucket := []byte("records")
		if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bucket); return err }); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			r := benchRecord(int64(i))
			data, err := json.Marshal(r)
			if err != nil {
				b.Fatal(err)
			}
			if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put([]byte(r.Key), data) }); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkBoltConcurrentCreate measures create throughput with callers
// writing at once; group commit lets them share commits.
func BenchmarkBoltConcurrentCreate(b *testing.B) {
	for _, callers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			benchConcurrentCreate(b, openBenchBolt(b), callers)
		})
	}
}

// BenchmarkMemory is the in-memory store, for reference.
func BenchmarkMemory(b *testing.B) {
	for _, callers := range []int{1, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			s := keystore.NewMemory()
			b.Cleanup(func() { _ = s.Close() })
			benchConcurrentCreate(b, s, callers)
		})
	}
}

// benchConcurrentCreate runs b.N creates spread over callers goroutines
// and reports creates per second.
func benchConcurrentCreate(b *testing.B, s keystore.Store, callers int) {
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
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				if _, _, err := s.Create(ctx, benchRecord(i)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "creates/s")
}
