package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/keystore/pgkeystore"
)

// `idem intents settle` on a Postgres keystore while a fleet worker holds
// the intent with an attempt in flight: refused without --force; forced,
// the verdict is recorded and the worker's late 201 is kept as
// conflicting evidence, and the worker's call says so instead of
// reporting a failure for a payment that was made.
func TestSettle_WhileAWorkerHoldsTheIntent(t *testing.T) {
	t.Parallel()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idemcli_")
	ks := []string{"--keystore", dsn, "--keystore-schema", schema, "--keystore-table", pgKeystoreTable}
	srv := idemtest.NewServer(t)
	srv.SetHandlerDelay(2 * time.Second)
	worker, err := idem.New(idem.WithKeystore(t.Context(), dsn,
		pgkeystore.WithOptions(&pgkeystore.Options{Schema: schema, Table: pgKeystoreTable})))
	require.NoError(t, err)
	defer worker.Close()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/payments",
		strings.NewReader(`{"amount": 1300, "currency": "EUR", "reference": "order-13"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	in, err := worker.Begin(t.Context(), "order-13/payment", req)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		resp, err := worker.Do(context.Background(), in)
		if resp != nil {
			resp.Body.Close()
		}
		done <- err
	}()
	require.Eventually(t, func() bool { return srv.Holding() == 1 }, 10*time.Second, 5*time.Millisecond)

	settle := append([]string{"settle", in.Key, "--failed", "--note", "not in the dashboard", "--by", "alice"}, ks...)
	_, stderr, err := runIntentsCLI(t, nil, settle...)
	requireOneLineError(t, stderr, err)
	assert.Equal(t, exitFailed, exitCodeOf(err))
	assert.Contains(t, stderr, "held by another live worker")
	assert.Contains(t, stderr, "--force")

	stdout, stderr, err := runIntentsCLI(t, nil, append(settle, "--force")...)
	require.NoError(t, err, stderr)
	assert.Contains(t, stdout, "failed (manual, by alice: not in the dashboard)")

	werr := <-done
	require.ErrorIs(t, werr, idem.ErrVerdictConflict)
	assert.NotErrorIs(t, werr, idem.ErrFinalFailure)
	assert.Equal(t, 1, srv.PaymentCount())

	show, stderr, err := runIntentsCLI(t, nil, append([]string{"show", in.Key}, ks...)...)
	require.NoError(t, err, stderr)
	assert.Regexp(t, `(?m)^State:\s+failed$`, show)
	assert.Regexp(t, `(?m)^  \S+  failed \(manual, by alice: not in the dashboard\)$`, show)
	assert.Regexp(t, `(?m)^  \S+  `+keystore.ReconciledConflict+` \(server, by \S+: status 201: `, show)
}
