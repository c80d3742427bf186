package pgstore

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// BenchmarkSweepPass times one Sweep pass (batch 1000) over a table of
// IDEM_SWEEP_ROWS live completed records (default 200,000) and 2,000
// live reservations, 300 of whose records are due: the last pass of
// every sweep, which finds fewer than a batch. The contenders are the
// statement as it is (statement_timestamp(), a range scan of each
// partial index) and the same statement on clock_timestamp(), as
// earlier versions sent it (each partial index read whole):
//
//	IDEM_SWEEP_ROWS=1000000 go test -run '^$' -bench SweepPass -count 3 ./server/pgstore/
func BenchmarkSweepPass(b *testing.B) {
	rows := 200_000
	if v := os.Getenv("IDEM_SWEEP_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(b, err, "IDEM_SWEEP_ROWS")
		rows = n
	}
	dsn := testenv.PostgresDSN(b)
	s, err := Open(b.Context(), dsn, WithSchema(testenv.PostgresSchema(b, dsn, "idembench_")))
	require.NoError(b, err)
	defer s.Close()
	records := table(s.schema, "idempotency_records")
	ctx := b.Context()
	_, err = s.pool.Exec(ctx, `
INSERT INTO `+records+` (principal, method, route, key, fingerprint, state, response_status, response_header,
	response_body, resource_id, created_at, expires_at)
SELECT 'alice', 'POST', '/v1/payments', 'k' || i, 'fp' || i, 'completed', 201, '\x',
	convert_to(repeat('x', 200), 'UTF8'), 'pay_' || i, now(), now() + (i % 86400) * interval '1 second' + interval '1 hour'
FROM generate_series(1, $1::int) i`, rows)
	require.NoError(b, err)
	_, err = s.pool.Exec(ctx, `
INSERT INTO `+records+` (principal, method, route, key, fingerprint, state, token, lease_expires, created_at)
SELECT 'alice', 'POST', '/v1/payments', 'r' || i, 'fp', 'reserved', 'token', now() + interval '1 hour', now()
FROM generate_series(1, 2000) i`)
	require.NoError(b, err)
	_, err = s.pool.Exec(ctx, "VACUUM ANALYZE "+records)
	require.NoError(b, err)
	due := func(b *testing.B, round int) {
		_, err := s.pool.Exec(ctx, `
INSERT INTO `+records+` (principal, method, route, key, fingerprint, state, response_status, response_header,
	response_body, resource_id, created_at, expires_at)
SELECT 'alice', 'POST', '/v1/payments', 'due-' || $1::text || '-' || i, 'fp', 'completed', 201, '\x', '\x', 'pay',
	now() - interval '2 hours', now() - interval '1 hour'
FROM generate_series(1, 300) i`, strconv.Itoa(round))
		require.NoError(b, err)
	}
	for _, c := range []struct{ name, sql string }{
		{"statement_timestamp", s.q.sweep},
		{"clock_timestamp", strings.ReplaceAll(s.q.sweep, "statement_timestamp()", "clock_timestamp()")},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := range b.N {
				b.StopTimer()
				due(b, i)
				b.StartTimer()
				tag, err := s.pool.Exec(ctx, c.sql, 1000, int64(86400e6))
				require.NoError(b, err)
				if tag.RowsAffected() != 300 {
					b.Fatalf("the pass deleted %d records, want the 300 due", tag.RowsAffected())
				}
			}
		})
	}
}
