package pgstore_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

// legacyDDL is the records table as earlier versions created it, CHECK
// constraints included, copied here so the upgrade is tested against the
// table a deployed database holds.
const legacyDDL = `
CREATE SCHEMA IF NOT EXISTS %[1]s;

CREATE TABLE IF NOT EXISTS %[1]s.idempotency_records (
	principal       text        NOT NULL,
	method          text        NOT NULL,
	route           text        NOT NULL,
	key             text        NOT NULL,
	fingerprint     text        NOT NULL,
	state           text        NOT NULL CHECK (state IN ('reserved', 'completed')),
	token           text,
	lease_expires   timestamptz,
	response_status integer,
	response_header bytea,
	response_body   bytea,
	resource_id     text,
	created_at      timestamptz NOT NULL,
	expires_at      timestamptz,
	CONSTRAINT idempotency_records_scope_key UNIQUE (principal, method, route, key),
	CONSTRAINT idempotency_records_reserved_has_lease
		CHECK (state <> 'reserved' OR (token IS NOT NULL AND lease_expires IS NOT NULL)),
	CONSTRAINT idempotency_records_completed_has_response
		CHECK (state <> 'completed' OR (response_status IS NOT NULL AND expires_at IS NOT NULL))
);

CREATE INDEX IF NOT EXISTS idempotency_records_expiry
	ON %[1]s.idempotency_records (expires_at) WHERE state = 'completed';

CREATE INDEX IF NOT EXISTS idempotency_records_lease
	ON %[1]s.idempotency_records (lease_expires) WHERE state = 'reserved';
`

// checks lists the CHECK constraints on the schema's records table.
func checks(t *testing.T, conn *pgx.Conn, schema string) []string {
	t.Helper()
	rows, err := conn.Query(t.Context(), `
SELECT conname FROM pg_constraint
WHERE conrelid = to_regclass($1) AND contype = 'c' ORDER BY conname`,
		pgx.Identifier{schema, "idempotency_records"}.Sanitize())
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return names
}

// A table created by an earlier version, holding a completed record and a
// live reservation, loses its CHECK constraints when a store opens on it,
// keeps its records (the completion replays, the reservation's owner
// completes it), and opening again changes nothing.
func TestOpenUpgradesALegacyTableInPlace(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idemtest_")
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, testenv.DirectDSN(dsn))
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, fmt.Sprintf(legacyDDL, pgx.Identifier{schema}.Sanitize()))
	require.NoError(t, err)
	require.Equal(t, []string{
		"idempotency_records_completed_has_response",
		"idempotency_records_reserved_has_lease",
		"idempotency_records_state_check",
	}, checks(t, conn, schema), "the legacy table as created")
	records := pgx.Identifier{schema, "idempotency_records"}.Sanitize()
	_, err = conn.Exec(ctx, `INSERT INTO `+records+` (principal, method, route, key, fingerprint, state,
		response_status, response_header, response_body, resource_id, created_at, expires_at)
		VALUES ('p', 'POST', '/r', 'done', 'fp', 'completed', 201, '\x', 'paid', 'pay_1', now(), now() + interval '1 hour')`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `INSERT INTO `+records+` (principal, method, route, key, fingerprint, state, token, lease_expires, created_at)
		VALUES ('p', 'POST', '/r', 'held', 'fp', 'reserved', 'old-token', now() + interval '1 hour', now())`)
	require.NoError(t, err)

	for range 2 {
		s, err := pgstore.Open(ctx, dsn, pgstore.WithSchema(schema))
		require.NoError(t, err)
		assert.Empty(t, checks(t, conn, schema), "after Open")
		_ = s.Close()
	}

	s := open(t, dsn, pgstore.WithSchema(schema))
	scope := server.Scope{Principal: "p", Method: http.MethodPost, Route: "/r"}
	res, rec, err := s.Reserve(ctx, scope, "done", "fp", time.Minute)
	require.NoError(t, err)
	require.Nil(t, res)
	require.NotNil(t, rec.Response)
	assert.Equal(t, "paid", string(rec.Response.Body), "the completed record replays")

	held := server.Reservation{Scope: scope, Key: "held", Fingerprint: "fp", Token: "old-token"}
	require.NoError(t, s.Complete(ctx, server.Completion{Reservation: held,
		Response: server.Response{Status: http.StatusCreated, Body: []byte("late")}, Retention: time.Hour}),
		"the reservation made before the upgrade completes with its token")
	res, _, err = s.Reserve(ctx, scope, "fresh", "fp", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, res, "a new key reserves on the upgraded table")
}
