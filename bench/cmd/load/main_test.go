package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
)

func TestTargetsFlagTakesLabelsWithEqualsSigns(t *testing.T) {
	t.Parallel()
	var f targetsFlag
	require.NoError(t, f.Set("postgres, pool_max_conns=16=http://127.0.0.1:1"))
	require.NoError(t, f.Set("http://127.0.0.1:2"))
	assert.Equal(t, targetsFlag{{"postgres, pool_max_conns=16", "http://127.0.0.1:1"}, {"memory", "http://127.0.0.1:2"}}, f)
	assert.Error(t, f.Set("=http://127.0.0.1:3"), "an empty label")
}

func TestRunComparesEveryServerWithItsOwnStore(t *testing.T) {
	t.Parallel()
	ref, err := testserver.New()
	require.NoError(t, err)
	t.Cleanup(func() { _ = ref.Close() })
	protected := httptest.NewServer(ref.Handler())
	t.Cleanup(protected.Close)
	plain := testserver.NewMemoryStore()
	t.Cleanup(func() { _ = plain.Close() })
	unprotected := httptest.NewServer(testserver.UnguardedPaymentsHandler(plain))
	t.Cleanup(unprotected.Close)

	var out bytes.Buffer
	err = run(context.Background(), []string{
		"-conns", "2", "-rounds", "1", "-duration", "30ms", "-warmup", "10ms",
		"-unprotected", "memory=" + unprotected.URL,
		"-protected", "memory=" + protected.URL,
		"-protected", "other=" + protected.URL,
	}, &out)
	require.NoError(t, err)
	table := out.String()
	assert.Contains(t, table, "| unprotected POST /v1/payments, store: memory |")
	assert.Contains(t, table, "| protected POST /v1/payments, store: memory |")
	lines := strings.Split(strings.TrimSpace(table), "\n")
	last := lines[len(lines)-1]
	assert.True(t, strings.HasPrefix(last, "| protected POST /v1/payments, store: other |"), last)
	assert.True(t, strings.HasSuffix(last, "| — |"), "no unprotected server on that store: %s", last)
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	assert.Error(t, run(context.Background(), []string{"-rounds", "0"}, &bytes.Buffer{}))
	assert.Error(t, run(context.Background(), []string{"-protected", "=http://127.0.0.1:1"}, &bytes.Buffer{}), "an empty label")
}
