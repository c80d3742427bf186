package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The example pays, serves /metrics, scrapes it and finds the idem
// metrics of both sides there.
func TestOtelpromScrapesIdemMetrics(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"--once", "--addr", "127.0.0.1:0"}, &out))
	for _, name := range []string{
		"idem_client_attempts_total",
		"idem_client_retries_total",
		"idem_client_replays_total",
		"idem_client_give_ups_total",
		"idem_client_key_conflicts_total",
		"idem_client_do_duration_seconds",
		"idem_client_retry_budget_tokens",
		"http_client_request_duration_seconds",
		"idem_server_requests_total",
		"idem_server_store_duration_seconds",
	} {
		assert.Contains(t, out.String(), "  "+name+"\n")
	}
	assert.Contains(t, out.String(), "span idem.Do")
	assert.Contains(t, out.String(), "idem.replay=server")
	assert.Contains(t, out.String(), "idem.decision=replayed")
}

func TestOtelpromRefusesABadAddress(t *testing.T) {
	var out bytes.Buffer
	err := run(context.Background(), []string{"--once", "--addr", "256.0.0.1:bad"}, &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "listening for /metrics")
}
