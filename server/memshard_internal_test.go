package server

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Keys whose hashes collide are told apart by their full scope and key:
// with every hash equal, each key keeps its own record, its own token and
// its own answer through reserve, complete, release and sweep.
func TestMemoryStoreCollidingHashesStayApart(t *testing.T) {
	t.Parallel()
	t.Run("equal hashes", func(t *testing.T) {
		testCollidingHashes(t, func(Scope, string) uint64 { return 42 })
	})
	t.Run("equal index fragments", func(t *testing.T) {
		testCollidingHashes(t, func(sc Scope, key string) uint64 { // bits 8 to 39 equal
			return uint64(len(key)+len(sc.Principal)+len(sc.Method)+len(sc.Route)+int(key[len(key)-1]))<<40 | 42
		})
	})
}

func testCollidingHashes(t *testing.T, hash func(Scope, string) uint64) {
	t.Parallel()
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	s := NewMemoryStore(WithClock(func() time.Time { return time.Unix(0, now.Load()) }))
	t.Cleanup(func() { _ = s.Close() })
	s.hashHook = hash
	ctx := t.Context()

	// Scopes and keys that differ only in where one string ends and the
	// next begins, or in one byte.
	scopes := []Scope{
		{Principal: "ab", Method: http.MethodPost, Route: "/r"},
		{Principal: "a", Method: http.MethodPost, Route: "/r"},
		{Principal: "ab", Method: http.MethodPut, Route: "/r"},
		{Principal: "ab", Method: http.MethodPost, Route: "/s"},
	}
	keys := []string{"k", "kb", "k1", "k2"}
	type held struct {
		scope Scope
		key   string
		res   *Reservation
	}
	var all []held
	for _, sc := range scopes {
		for _, k := range keys {
			res, rec, err := s.Reserve(ctx, sc, k, "fp-"+k, time.Minute)
			require.NoError(t, err)
			require.Nil(t, rec, "%v %q is a new key", sc, k)
			all = append(all, held{sc, k, res})
		}
	}
	n, _ := s.Usage()
	require.Equal(t, len(all), n)

	for i, h := range all {
		switch i % 3 {
		case 0: // completed with its own answer
			require.NoError(t, s.Complete(ctx, Completion{Reservation: *h.res, Response: Response{Status: 200 + i, Body: []byte(h.key)}, Retention: time.Hour}))
		case 1: // released
			require.NoError(t, s.Release(ctx, *h.res))
		}
	}
	// Another key's token never owns a record.
	other := *all[2].res
	other.Key = all[5].key
	other.Scope = all[5].scope
	require.ErrorIs(t, s.Release(ctx, other), ErrFenced)

	for i, h := range all {
		rec, err := s.Lookup(ctx, h.scope, h.key)
		require.NoError(t, err)
		switch i % 3 {
		case 0:
			require.NotNil(t, rec)
			assert.Equal(t, StateCompleted, rec.State)
			assert.Equal(t, 200+i, rec.Response.Status)
			assert.Equal(t, h.key, string(rec.Response.Body))
			assert.Equal(t, "fp-"+h.key, rec.Fingerprint)
		case 1:
			assert.Nil(t, rec, "released %v %q", h.scope, h.key)
		case 2:
			require.NotNil(t, rec)
			assert.Equal(t, StateReserved, rec.State)
			assert.Equal(t, h.res.Token, rec.Token)
		}
	}

	// A released key is new again; the others answer as they were.
	res, rec, err := s.Reserve(ctx, all[1].scope, all[1].key, "fp", time.Minute)
	require.NoError(t, err)
	require.Nil(t, rec)
	require.NoError(t, s.Release(ctx, *res))
	_, rec, err = s.Reserve(ctx, all[0].scope, all[0].key, "fp-"+all[0].key, time.Minute)
	require.NoError(t, err)
	require.NotNil(t, rec)
	assert.Equal(t, StateCompleted, rec.State)

	// Once everything is due, a sweep deletes every colliding record.
	now.Add(int64(48 * time.Hour))
	_, err = s.Sweep(ctx, 1000)
	require.NoError(t, err)
	n, size := s.Usage()
	assert.Zero(t, n)
	assert.Zero(t, size)
	for _, h := range all {
		rec, err := s.Lookup(ctx, h.scope, h.key)
		require.NoError(t, err)
		assert.Nil(t, rec)
	}
}

// The arena a part keeps its bytes in is rewritten once most of it is
// dead, and every record survives the rewrite unchanged.
func TestMemoryStoreArenaCompaction(t *testing.T) {
	t.Parallel()
	s := NewMemoryStore()
	t.Cleanup(func() { _ = s.Close() })
	s.hashHook = func(_ Scope, key string) uint64 { // every key in part 0
		n, _ := strconv.ParseUint(key[1:], 10, 64)
		return n * memShardCount
	}
	ctx := t.Context()
	// Most bodies share chunks; one in seven is large enough for a chunk
	// of its own.
	bodyOf := func(i int) []byte {
		if i%7 == 0 {
			return bytes.Repeat([]byte{byte(i)}, memChunkSize/2)
		}
		return bytes.Repeat([]byte{byte(i)}, 1000)
	}
	const total = 400
	for i := range total {
		res, _, err := s.Reserve(ctx, partsScope, fmt.Sprintf("k%d", i), "fp", time.Hour)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, Completion{Reservation: *res, Response: Response{Status: 201, Header: http.Header{"N": {strconv.Itoa(i)}}, Body: bodyOf(i)}, Retention: time.Hour}))
	}
	sh := &s.shards[0]
	grown := sh.total
	// Delete nine records in ten, as a sweep would.
	for i := range total {
		if i%10 == 0 {
			continue
		}
		sh.mu.Lock()
		j := sh.find(uint64(i)*memShardCount, partsScope, fmt.Sprintf("k%d", i))
		s.delete(sh, j)
		sh.compact()
		sh.mu.Unlock()
	}
	sh.mu.Lock()
	after, dead := sh.total, sh.dead
	sh.mu.Unlock()
	assert.Less(t, after, grown/4, "the arena was rewritten without its dead bytes")
	assert.LessOrEqual(t, dead, max(memArenaSlack, after/2))
	for i := 0; i < total; i += 10 {
		rec, err := s.Lookup(ctx, partsScope, fmt.Sprintf("k%d", i))
		require.NoError(t, err)
		require.NotNil(t, rec)
		assert.Equal(t, []string{strconv.Itoa(i)}, rec.Response.Header["N"])
		assert.Equal(t, bodyOf(i), rec.Response.Body)
		assert.Equal(t, "fp", rec.Fingerprint)
	}
	n, _ := s.Usage()
	assert.Equal(t, total/10, n)
}

// A part mostly emptied gives back its slot blocks and index, and keeps
// working as it fills again.
func TestMemoryStorePartShrinksAndRefills(t *testing.T) {
	t.Parallel()
	s := NewMemoryStore()
	t.Cleanup(func() { _ = s.Close() })
	s.hashHook = func(_ Scope, key string) uint64 { // every key in part 0
		n, _ := strconv.ParseUint(key[1:], 10, 64)
		return n * memShardCount
	}
	ctx := t.Context()
	sh := &s.shards[0]
	fill := func(from, to int) {
		for i := from; i < to; i++ {
			res, _, err := s.Reserve(ctx, partsScope, fmt.Sprintf("k%d", i), "fp", time.Hour)
			require.NoError(t, err)
			require.NoError(t, s.Complete(ctx, Completion{Reservation: *res, Response: Response{Status: 201, Body: bytes.Repeat([]byte{byte(i)}, 300)}, Retention: time.Hour}))
		}
	}
	fill(0, 3*memSlotBlock)
	sh.mu.Lock()
	require.Len(t, sh.slots, 3)
	for i := 10; i < 3*memSlotBlock; i++ {
		s.delete(sh, sh.find(uint64(i)*memShardCount, partsScope, fmt.Sprintf("k%d", i)))
	}
	sh.compact()
	assert.Len(t, sh.slots, 1, "empty blocks dropped")
	assert.Equal(t, 10, sh.nslots)
	assert.Less(t, len(sh.index.cells), 3*memSlotBlock, "the index shrank")
	sh.mu.Unlock()

	fill(3*memSlotBlock, 5*memSlotBlock)
	for i := range 5 * memSlotBlock {
		rec, err := s.Lookup(ctx, partsScope, fmt.Sprintf("k%d", i))
		require.NoError(t, err)
		if i >= 10 && i < 3*memSlotBlock {
			require.Nil(t, rec, "k%d was deleted", i)
			continue
		}
		require.NotNil(t, rec, "k%d", i)
		require.Equal(t, bytes.Repeat([]byte{byte(i)}, 300), rec.Response.Body)
	}
	n, _ := s.Usage()
	assert.Equal(t, 10+2*memSlotBlock, n)
}

// Through random writes, completions, takeovers and deletes of records of
// every size, every record reads back as written, the arena's counts
// match its chunks and slots, and it is never more than half dead past
// the slack. Records deleted in the order they were written empty whole
// chunks, which are dropped without a compaction.
func TestMemoryStoreArenaAccounting(t *testing.T) {
	t.Parallel()
	var now atomic.Int64
	now.Store(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	s := NewMemoryStore(WithClock(func() time.Time { return time.Unix(0, now.Load()) }))
	t.Cleanup(func() { _ = s.Close() })
	s.hashHook = func(_ Scope, key string) uint64 { // every key in part 0
		n, _ := strconv.ParseUint(key[1:], 10, 64)
		return n * memShardCount
	}
	ctx := t.Context()
	sh := &s.shards[0]
	check := func() {
		t.Helper()
		sh.mu.Lock()
		defer sh.mu.Unlock()
		total, live := 0, 0
		for c, b := range sh.chunks {
			total += len(b)
			live += sh.chunkLive[c]
		}
		used := 0
		for i := range sh.nslots {
			if sl := sh.slot(i); sl.used {
				used += int(sl.id.n) + int(sl.resp.n)
			}
		}
		require.Equal(t, total, sh.total)
		require.Equal(t, live, used)
		require.Equal(t, total-live, sh.dead)
		require.True(t, sh.dead <= memArenaSlack || 2*sh.dead <= sh.total, "dead %d of %d", sh.dead, sh.total)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	bodies := map[int][]byte{} // completed key → body
	held := map[int]*Reservation{}
	next := 0
	for round := range 3000 {
		switch op := rng.IntN(10); {
		case op < 5 || len(held)+len(bodies) == 0:
			res, _, err := s.Reserve(ctx, partsScope, fmt.Sprintf("k%d", next), fmt.Sprintf("fp%d", rng.IntN(3)), time.Minute)
			require.NoError(t, err)
			held[next] = res
			next++
		case op < 8 && len(held) > 0:
			for k, res := range held {
				size := rng.IntN(2000)
				if rng.IntN(20) == 0 {
					size = memChunkSize/4 + rng.IntN(memChunkSize)
				}
				body := bytes.Repeat([]byte{byte(k)}, size)
				require.NoError(t, s.Complete(ctx, Completion{Reservation: *res, Response: Response{Status: 201, Body: body}, Retention: time.Hour}))
				delete(held, k)
				bodies[k] = body
				break
			}
		default:
			for k, res := range held {
				require.NoError(t, s.Release(ctx, *res))
				delete(held, k)
				break
			}
			for k := range bodies {
				sh.mu.Lock()
				s.delete(sh, sh.find(uint64(k)*memShardCount, partsScope, fmt.Sprintf("k%d", k)))
				sh.compact()
				sh.mu.Unlock()
				delete(bodies, k)
				break
			}
		}
		if round%100 == 0 {
			check()
		}
	}
	check()
	for k, body := range bodies {
		rec, err := s.Lookup(ctx, partsScope, fmt.Sprintf("k%d", k))
		require.NoError(t, err)
		require.NotNil(t, rec)
		require.Equal(t, body, rec.Response.Body, "k%d", k)
	}
	for k, res := range held {
		rec, err := s.Lookup(ctx, partsScope, fmt.Sprintf("k%d", k))
		require.NoError(t, err)
		require.NotNil(t, rec)
		require.Equal(t, res.Token, rec.Token)
	}

	// Everything due (reservations too, past their grace) and swept in
	// write order: the chunks are dropped as they empty.
	now.Add(int64(48 * time.Hour))
	for {
		n, err := s.Sweep(ctx, 10)
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	check()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.cur >= 0 {
		assert.Equal(t, len(sh.chunks[sh.cur]), sh.dead, "only the current chunk's bytes, dead, are left")
	} else {
		assert.Zero(t, sh.dead)
	}
	kept := 0
	for _, b := range sh.chunks {
		if b != nil {
			kept++
		}
	}
	assert.LessOrEqual(t, kept, 1, "only the current chunk is kept")
}
