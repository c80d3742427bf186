package pgstore

import "fmt"

// queries holds the store's SQL with the schema's table names filled in
// once, at Open.
type queries struct {
	reserve, takeover, selectRecord, complete, completeOrAbort, completeOrAbortBounded, release, sweep string
}

// Every time below comes from statement_timestamp(): the database's
// clock, read when the statement starts, so no replica's clock ever
// decides a lease or a retention. It is stable within a statement, unlike
// clock_timestamp(), so a comparison with it can bound an index scan
// (Sweep).
func newQueries(schema string, asyncReserve bool) queries {
	records := table(schema, "idempotency_records")
	// With asyncReserve, the statement first turns synchronous_commit off
	// for its own transaction (set_config's third argument: local), so its
	// commit does not wait for the log flush; the pooled session keeps its
	// setting.
	asyncFrom := ""
	if asyncReserve {
		asyncFrom = "FROM (SELECT set_config('synchronous_commit', 'off', true)) AS async_commit"
	}
	return queries{
		// Create-if-absent on the unique constraint. No row back means a
		// record is there already: takeover and selectRecord follow.
		reserve: fmt.Sprintf(`
INSERT INTO %[1]s (principal, method, route, key, fingerprint, state, token, lease_expires, created_at)
SELECT $1, $2, $3, $4, $5, 'reserved', $6, statement_timestamp() + $7 * interval '1 microsecond', statement_timestamp()
%[2]s
ON CONFLICT DO NOTHING
RETURNING true`, records, asyncFrom),

		// Take over a record whose lease expired (same fingerprint only:
		// another payload under the key is a reused key) or whose retention
		// ended. Same arguments as reserve; no row back means the existing
		// record stands.
		takeover: fmt.Sprintf(`
UPDATE %[1]s SET fingerprint = $5, state = 'reserved', token = $6,
	lease_expires = statement_timestamp() + $7 * interval '1 microsecond', created_at = statement_timestamp(),
	response_status = NULL, response_header = NULL, response_body = NULL, resource_id = NULL, expires_at = NULL
%[2]s
WHERE principal = $1 AND method = $2 AND route = $3 AND key = $4
  AND ((state = 'reserved' AND lease_expires <= statement_timestamp() AND fingerprint = $5)
    OR (state = 'completed' AND expires_at <= statement_timestamp()))
RETURNING true`, records, asyncFrom),

		selectRecord: fmt.Sprintf(`
SELECT fingerprint, state, token, lease_expires, response_status, response_header,
       response_body, resource_id, created_at, expires_at
FROM %[1]s WHERE principal = $1 AND method = $2 AND route = $3 AND key = $4`, records),

		complete: completeSQL(records),

		// complete, made to fail when fenced: it divides by the number of
		// records it completed, so a token that owns nothing raises
		// division_by_zero (fencedState) and aborts the batch that it is
		// sent in, effect included.
		completeOrAbort: fmt.Sprintf(`
WITH completed AS (%[2]s
RETURNING 1)
SELECT 1 / count(*) FROM completed`, records, completeSQL(records)),

		// completeOrAbort that also bounds the rest of its transaction
		// (boundTransaction) when $11 is not null, so CompleteBatch's bound
		// costs no statement of its own.
		completeOrAbortBounded: fmt.Sprintf(`
WITH completed AS (%[2]s
RETURNING 1)
SELECT 1 / count(*),
       CASE WHEN $11::text IS NOT NULL THEN set_config('lock_timeout', $11, true) END,
       CASE WHEN $11::text IS NOT NULL THEN set_config('statement_timeout', $11, true) END
FROM completed`, records, completeSQL(records)),

		release: fmt.Sprintf(`
DELETE FROM %[1]s
WHERE principal = $1 AND method = $2 AND route = $3 AND key = $4
  AND state = 'reserved' AND token = $5`, records),

		// $1 is the batch size, $2 the reservation grace in microseconds.
		// The batch is chosen once, in materialized CTEs: a LIMIT subquery
		// joined in USING may be rescanned and pick more rows. Expired
		// completed records go first, abandoned reservations fill what is
		// left of the batch; each is a range scan of its partial index,
		// bounded by the stable statement_timestamp(). SKIP LOCKED lets
		// concurrent sweeps (one per replica) share the work; the outer
		// condition is checked again so a record taken over meanwhile is
		// left alone.
		sweep: fmt.Sprintf(`
WITH expired AS MATERIALIZED (
	SELECT principal, method, route, key FROM %[1]s
	WHERE state = 'completed' AND expires_at <= statement_timestamp()
	ORDER BY expires_at LIMIT $1
	FOR UPDATE SKIP LOCKED
), abandoned AS MATERIALIZED (
	SELECT principal, method, route, key FROM %[1]s
	WHERE state = 'reserved' AND lease_expires <= statement_timestamp() - $2 * interval '1 microsecond'
	ORDER BY lease_expires LIMIT $1 - (SELECT count(*) FROM expired)
	FOR UPDATE SKIP LOCKED
)
DELETE FROM %[1]s AS r USING (SELECT * FROM expired UNION ALL SELECT * FROM abandoned) AS due
WHERE r.principal = due.principal AND r.method = due.method AND r.route = due.route AND r.key = due.key
  AND ((r.state = 'completed' AND r.expires_at <= statement_timestamp())
    OR (r.state = 'reserved' AND r.lease_expires <= statement_timestamp() - $2 * interval '1 microsecond'))`, records),
	}
}

// completeSQL is the compare-and-set of a completion on the record's
// primary key and token; its arguments are completionArgs'.
func completeSQL(records string) string {
	return fmt.Sprintf(`
UPDATE %[1]s SET state = 'completed', token = NULL, lease_expires = NULL,
	response_status = $6, response_header = $7, response_body = $8, resource_id = $9,
	expires_at = statement_timestamp() + $10 * interval '1 microsecond'
WHERE principal = $1 AND method = $2 AND route = $3 AND key = $4
  AND state = 'reserved' AND token = $5`, records)
}
