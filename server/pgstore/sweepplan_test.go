package pgstore

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// Sweep's two choices of due records are range scans of their partial
// indexes, bounded by the due time, not index scans that read every
// entry and filter: a pass costs what it deletes, not the table's size.
// (A volatile clock, clock_timestamp(), cannot bound an index scan.)
func TestSweepRangeScansItsIndexes(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	s, err := Open(t.Context(), dsn, WithSchema(testenv.PostgresSchema(t, dsn, "idemtest_")))
	require.NoError(t, err)
	defer s.Close()
	var plan string
	require.NoError(t, s.pool.QueryRow(t.Context(), "EXPLAIN (FORMAT JSON) "+s.q.sweep, 1000, int64(60e6)).Scan(&plan))
	var root []map[string]any
	require.NoError(t, json.Unmarshal([]byte(plan), &root))
	conds := map[string]string{}
	var walk func(node map[string]any)
	walk = func(node map[string]any) {
		if name, ok := node["Index Name"].(string); ok {
			cond, _ := node["Index Cond"].(string)
			conds[name] += cond
		}
		children, _ := node["Plans"].([]any)
		for _, c := range children {
			walk(c.(map[string]any))
		}
	}
	walk(root[0]["Plan"].(map[string]any))
	assert.True(t, strings.Contains(conds["idempotency_records_expiry"], "expires_at <="),
		"expired records: index conditions %q", conds)
	assert.True(t, strings.Contains(conds["idempotency_records_lease"], "lease_expires <="),
		"abandoned reservations: index conditions %q", conds)
}
