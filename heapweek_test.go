package idem

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// TestHeapOverASimulatedWeek prints the live heap of a Client sending
// intents for a week of its clock, with the default 24-hour retention,
// for a memory keystore purged on the default schedule, one never purged
// (as before WithPurgeEvery), and a bbolt keystore purged on the same
// schedule. A week at 100 intents a second is 60 million intents; the
// run thins them to IDEM_HEAP_WEEK intents spread evenly over the week
// (IDEM_HEAP_WEEK=120960 is one every 5 s): the heap a store holds is
// about its bytes per record times rate times retention, so the figures
// scale by the rate. Run:
//
//	IDEM_HEAP_WEEK=120960 go test -run TestHeapOverASimulatedWeek -v .
func TestHeapOverASimulatedWeek(t *testing.T) {
	v := os.Getenv("IDEM_HEAP_WEEK")
	if v == "" {
		t.Skip("set IDEM_HEAP_WEEK to the number of intents to spread over a simulated week")
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "IDEM_HEAP_WEEK")
	require.Positive(t, n, "IDEM_HEAP_WEEK")
	const week = 7 * 24 * time.Hour
	step := week / time.Duration(n)
	srv := boundServer(t)
	contenders := []struct {
		name string
		opts func() []Option
	}{
		{"memory, purged every 10 min", func() []Option { return nil }},
		{"memory, never purged", func() []Option { return nil }},
		{"bbolt (no fsync), purged every 10 min", func() []Option {
			return []Option{WithStore(mustBolt(t))}
		}},
	}
	for ci, ct := range contenders {
		clock := newTestClock()
		c := boundClient(t, clock, append(ct.opts(), WithRetention(DefaultRetention))...)
		purge := ci != 1
		nextPurge := clock.Now().Add(DefaultMemoryPurgeEvery)
		nextReport := clock.Now().Add(12 * time.Hour)
		start := clock.Now()
		t.Logf("%s: %d intents, one every %s of the clock", ct.name, n, step)
		for i := range n {
			driveIntent(t, c, clock, srv.URL+"/v1/payments", i, i%5000 == 0, step)
			if purge && !clock.Now().Before(nextPurge) {
				_, err := c.purgeNow()
				require.NoError(t, err)
				nextPurge = nextPurge.Add(DefaultMemoryPurgeEvery)
			}
			if !clock.Now().Before(nextReport) {
				settled, unsettled := storeCounts(t, c)
				heap := liveHeap()
				t.Logf("  day %4.1f: %7d intents sent, %6d settled + %3d unsettled held, live heap %7.1f MiB",
					clock.Now().Sub(start).Hours()/24, i+1, settled, unsettled, float64(heap)/(1<<20))
				nextReport = nextReport.Add(12 * time.Hour)
			}
		}
		require.NoError(t, c.Close())
	}
}

// mustBolt opens a bbolt keystore without fsync in a temporary directory.
func mustBolt(t *testing.T) keystore.Store {
	st, err := keystore.OpenBolt(filepath.Join(t.TempDir(), "intents.db"), &keystore.BoltOptions{NoSync: true})
	require.NoError(t, err)
	return st
}
