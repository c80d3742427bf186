package pgstore

import (
	"fmt"
	"sync"
)

// onceQueries holds the SQL of CommitOnce for one schema.
type onceQueries struct {
	// claimCompleted inserts the key's record already completed with its
	// answer, or takes over a record Reserve would take over; when
	// neither, it divides by zero (fencedState), which aborts the batch,
	// effect included. Arguments: principal, method, route, key,
	// fingerprint, then the answer's status, header, body, resource id,
	// the retention in microseconds and the transaction's bound as a
	// setting ("250ms"): lock_timeout and statement_timeout for the
	// statements after it (set_config's local: until the transaction
	// ends).
	claimCompleted string
	// claimReserved is the same claim as a reservation with token $6 and
	// a lease of $7 microseconds, for a transaction the handler reads in
	// before it writes; no row back means the key is taken.
	claimReserved string
	// complete completes the reservation of token $5 with the answer
	// ($6…$10), inside the transaction that claimed it.
	complete string
}

// onceQueriesBySchema caches onceQueries per schema: built once, not per
// request.
var onceQueriesBySchema sync.Map // schema → *onceQueries

func onceQueriesFor(schema string) *onceQueries {
	if q, ok := onceQueriesBySchema.Load(schema); ok {
		return q.(*onceQueries)
	}
	q, _ := onceQueriesBySchema.LoadOrStore(schema, newOnceQueries(schema))
	return q.(*onceQueries)
}

// onceTakeover is when a claim may overwrite the key's record: as Reserve
// does, a reservation whose lease ended, under the same fingerprint, or
// a completed record past its retention. Any other record keeps the key.
const onceTakeover = `
WHERE (r.state = 'reserved' AND r.lease_expires <= statement_timestamp() AND r.fingerprint = EXCLUDED.fingerprint)
   OR (r.state = 'completed' AND r.expires_at <= statement_timestamp())`

func newOnceQueries(schema string) *onceQueries {
	records := table(schema, "idempotency_records")
	// The conflict target names the columns, not the constraint, so any
	// unique index on them decides the owner.
	return &onceQueries{
		claimCompleted: fmt.Sprintf(`
WITH claimed AS (
INSERT INTO %[1]s AS r (principal, method, route, key, fingerprint, state,
	response_status, response_header, response_body, resource_id, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, 'completed', $6, $7, $8, $9, statement_timestamp(),
	statement_timestamp() + $10 * interval '1 microsecond')
ON CONFLICT (principal, method, route, key) DO UPDATE SET
	fingerprint = EXCLUDED.fingerprint, state = 'completed', token = NULL, lease_expires = NULL,
	response_status = EXCLUDED.response_status, response_header = EXCLUDED.response_header,
	response_body = EXCLUDED.response_body, resource_id = EXCLUDED.resource_id,
	created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
%[2]s
RETURNING 1)
SELECT 1 / count(*) FROM claimed,
	(SELECT set_config('lock_timeout', $11, true), set_config('statement_timeout', $11, true)) AS bound`, records, onceTakeover),

		claimReserved: fmt.Sprintf(`
INSERT INTO %[1]s AS r (principal, method, route, key, fingerprint, state, token, lease_expires, created_at)
VALUES ($1, $2, $3, $4, $5, 'reserved', $6, statement_timestamp() + $7 * interval '1 microsecond', statement_timestamp())
ON CONFLICT (principal, method, route, key) DO UPDATE SET
	fingerprint = EXCLUDED.fingerprint, state = 'reserved', token = EXCLUDED.token,
	lease_expires = EXCLUDED.lease_expires, created_at = EXCLUDED.created_at,
	response_status = NULL, response_header = NULL, response_body = NULL,
	resource_id = NULL, expires_at = NULL
%[2]s
RETURNING true`, records, onceTakeover),

		complete: fmt.Sprintf(`
UPDATE %[1]s SET state = 'completed', token = NULL, lease_expires = NULL,
	response_status = $6, response_header = $7, response_body = $8, resource_id = $9,
	expires_at = statement_timestamp() + $10 * interval '1 microsecond'
WHERE principal = $1 AND method = $2 AND route = $3 AND key = $4 AND state = 'reserved' AND token = $5`, records),
	}
}
