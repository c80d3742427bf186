package idem

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

func TestIsReplay(t *testing.T) {
	t.Parallel()
	assert.False(t, IsReplay(nil))
	assert.False(t, IsReplay(&http.Response{Header: http.Header{}}))
	assert.True(t, IsReplay(&http.Response{Header: http.Header{"Idempotent-Replayed": {"true"}}}))
	assert.True(t, IsReplay(&http.Response{Header: http.Header{"Idempotent-Replayed": {"TRUE"}}}))
	assert.False(t, IsReplay(&http.Response{Header: http.Header{"Idempotent-Replayed": {"false"}}}))
	local := storedResponse(&keystore.Response{Status: 201, Body: []byte("x")}, nil, true)
	assert.True(t, IsReplay(local))
	assert.True(t, IsLocalReplay(local))
}

func TestStoredResponseRoundTrip(t *testing.T) {
	t.Parallel()
	resp := &http.Response{
		StatusCode: 201,
		Header:     http.Header{"Content-Type": {"application/json"}, "Set-Cookie": {"s=1"}, "Location": {"/x"}},
		Body:       io.NopCloser(strings.NewReader(`{"id":"pay_1"}`)),
	}
	stored, truncated, err := capture(resp)
	require.NoError(t, err)
	assert.False(t, truncated)
	assert.Empty(t, stored.Header.Get("Set-Cookie"), "cookies are not stored")
	assert.Equal(t, "/x", stored.Header.Get("Location"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, `{"id":"pay_1"}`, string(body), "the caller still reads the body")

	back := storedResponse(stored, nil, false)
	assert.Equal(t, "201 Created", back.Status)
	body, err = io.ReadAll(back.Body)
	require.NoError(t, err)
	assert.Equal(t, `{"id":"pay_1"}`, string(body))
}
