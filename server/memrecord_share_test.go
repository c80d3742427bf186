package server

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A decoded response shares one copy of the stored bytes and one array of
// header values: changing it must neither reach the stored bytes nor
// one header's values from another's.
func TestDecodeResponseSharesNothingWritable(t *testing.T) {
	t.Parallel()
	stored := encodeResponse(Response{Status: 201, ResourceID: "p-1",
		Header: http.Header{"A": {"1"}, "B": {"2"}}, Body: []byte("body")})
	kept := append([]byte(nil), stored...)
	got, err := decodeResponse(stored)
	require.NoError(t, err)
	got.Header.Add("A", "3")
	got.Header.Add("B", "4")
	assert.Equal(t, []string{"1", "3"}, got.Header["A"])
	assert.Equal(t, []string{"2", "4"}, got.Header["B"])
	got.Body[0] = 'X'
	got.Body = append(got.Body, "more"...)
	assert.Equal(t, kept, stored, "the stored bytes changed")
	again, err := decodeResponse(stored)
	require.NoError(t, err)
	assert.Equal(t, []byte("body"), again.Body)
	assert.Equal(t, "p-1", again.ResourceID)
}
