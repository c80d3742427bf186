package keystore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// boundedRun writes n intents to s as a client does (created pending,
// then settled; every 50th left pending), the clock moving 10 ms an
// intent, and purges every 500 intents those past a one-second
// retention. After each purge, check is given the number of intents
// written, of records that may be held (those of the last retention and
// since the purge before, plus the pending ones), and of pending ones.
func boundedRun(t *testing.T, s Store, n int, check func(written, mayHold, pending int)) {
	ctx := context.Background()
	start := time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)
	const step, retention, purgeEvery = 10 * time.Millisecond, time.Second, 500
	pending := 0
	for i := range n {
		now := start.Add(time.Duration(i) * step)
		r := &Record{Key: fmt.Sprintf("key-%d", i), Method: "POST", URL: "https://api.example.com/v1/payments",
			State: Pending, CreatedAt: now, UpdatedAt: now, Principal: "acct_1"}
		if i%2 == 0 {
			r.Name = ScopedName(fmt.Sprintf("order/%d", i), "acct_1")
		}
		// Adopted where the store adopts, as the Client creates: r is
		// the store's then, and the update writes a copy.
		create := s.Create
		if a, ok := s.(Adopter); ok {
			create = a.AdoptCreate
		}
		_, _, err := create(ctx, r)
		require.NoError(t, err)
		if i%50 == 0 {
			pending++
		} else {
			done := r.Clone()
			done.State, done.Response = Succeeded, &Response{Status: 201, Body: []byte(`{"id":"pay_1"}`)}
			require.NoError(t, s.Update(ctx, done))
		}
		if (i+1)%purgeEvery != 0 {
			continue
		}
		cutoff := now.Add(-retention)
		_, err = s.Purge(ctx, PurgeRequest{OlderThan: cutoff, KeepNamesAfter: cutoff})
		require.NoError(t, err)
		check(i+1, int(retention/step)+purgeEvery+pending, pending)
	}
}

// A memory store purged on a schedule holds the records of the last
// retention and the pending ones, in each of its maps, however many
// intents went through it.
func TestMemoryHoldsBoundedMaps(t *testing.T) {
	t.Parallel()
	m := NewMemory()
	t.Cleanup(func() { _ = m.Close() })
	boundedRun(t, m, 5000, func(written, mayHold, pending int) {
		m.mu.RLock()
		defer m.mu.RUnlock()
		require.LessOrEqual(t, len(m.records), mayHold, "records after %d intents", written)
		named := 0
		for _, e := range m.records {
			if e.name != "" {
				named++
			}
		}
		require.Equal(t, named, len(m.names), "names after %d intents", written)
		scoped := 0
		for _, names := range m.scoped {
			scoped += len(names)
		}
		require.Equal(t, named, scoped, "scoped names after %d intents", written)
		held := 0
		for _, e := range m.records {
			if !e.state.Settled() {
				held++
			}
		}
		require.Equal(t, pending, held, "pending records after %d intents", written)
	})
}

// A bbolt store keeps in memory the index of its log, the records it
// adopted and the writes it deferred; each is bounded whatever the number
// of intents, and a purge (which folds the log) empties the log index.
func TestBoltHoldsBoundedIndexes(t *testing.T) {
	t.Parallel()
	b, err := OpenBolt(filepath.Join(t.TempDir(), "keys.db"), &BoltOptions{Timeout: time.Second, NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	b.foldAt, b.foldBatch = 64, 16
	boundedRun(t, b, 3000, func(written, mayHold, _ int) {
		require.Zero(t, b.log.size(), "log index after a purge, %d intents", written)
		b.adopted.mu.Lock()
		adopted, order := len(b.adopted.recs), len(b.adopted.order)
		b.adopted.mu.Unlock()
		require.LessOrEqual(t, adopted, adoptedMax, "adopted records after %d intents", written)
		require.LessOrEqual(t, order, 2*adoptedMax, "adopted keys after %d intents", written)
		require.Empty(t, b.deferredSnapshot(), "deferred writes after %d intents", written)
		require.LessOrEqual(t, bucketLen(t, b, bucketRecords), mayHold, "records after %d intents", written)
	})
}
