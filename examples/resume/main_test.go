package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
)

func TestResumeRerunReplays(t *testing.T) {
	ts, err := testserver.New()
	require.NoError(t, err)
	defer ts.Close()
	hs := httptest.NewServer(ts.Handler())
	defer hs.Close()
	o := options{server: hs.URL, keystore: filepath.Join(t.TempDir(), "resume.db"), count: 3, token: "tok", batch: "b"}

	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, o))
	assert.Contains(t, out.String(), "3 paid now, 0 paid by an earlier run")

	out.Reset()
	require.NoError(t, run(context.Background(), &out, o))
	assert.Contains(t, out.String(), "0 paid now, 3 paid by an earlier run")
	n, err := ts.Store().CountPayments(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 3, n)

	assert.Error(t, run(context.Background(), &out, options{count: 0}))
}
