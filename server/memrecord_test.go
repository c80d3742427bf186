package server

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResponseEncodingRoundTrips(t *testing.T) {
	t.Parallel()
	for name, resp := range map[string]Response{
		"zero":                  {},
		"nil header and body":   {Status: http.StatusNoContent},
		"empty header and body": {Status: http.StatusOK, Header: http.Header{}, Body: []byte{}},
		"payment": {
			Status:     http.StatusCreated,
			Header:     http.Header{"Content-Type": {"application/json"}, "Location": {"/v1/payments/pay_1"}},
			Body:       []byte(`{"id":"pay_1"}`),
			ResourceID: "pay_1",
		},
		"nil and empty values kept apart": {
			Status: 999,
			Header: http.Header{"X-Nil": nil, "X-Empty": {}, "X-Many": {"a", "", "caf\xe9"}, "": {""}},
			Body:   []byte{0, 0xff, '\n'},
		},
	} {
		encoded := encodeResponse(resp)
		assert.Len(t, encoded, cap(encoded), "%s: sized exactly", name)
		got, err := decodeResponse(encoded)
		require.NoError(t, err, name)
		assert.Equal(t, resp, got, name)
	}
}

func TestResponseDecodingCopies(t *testing.T) {
	t.Parallel()
	encoded := encodeResponse(Response{Status: http.StatusOK, Header: http.Header{"A": {"b"}}, Body: []byte("body")})
	got, err := decodeResponse(encoded)
	require.NoError(t, err)
	got.Body[0] = 'X'
	got.Header["A"][0] = "changed"
	again, err := decodeResponse(encoded)
	require.NoError(t, err)
	assert.Equal(t, "body", string(again.Body))
	assert.Equal(t, "b", again.Header.Get("A"))
}

func TestResponseDecodingRefusesCorruptBytes(t *testing.T) {
	t.Parallel()
	encoded := encodeResponse(Response{Status: http.StatusOK, Header: http.Header{"A": {"b"}}, Body: []byte("body")})
	for i := range encoded {
		_, err := decodeResponse(encoded[:i])
		assert.ErrorIs(t, err, errCorruptResponse, "truncated to %d bytes", i)
	}
	_, err := decodeResponse(append(encoded, 'x'))
	assert.ErrorIs(t, err, errCorruptResponse, "trailing byte")
	_, err = decodeResponse([]byte{responseHeaderNil, 100, 0, 1, 1, 'A', 1, 0})
	assert.ErrorIs(t, err, errCorruptResponse, "names under a nil header")
	_, err = decodeResponse([]byte{0, 100, 0, 1, 1, 'A', 0xff, 0xff, 0xff, 0xff, 0x0f, 0})
	assert.ErrorIs(t, err, errCorruptResponse, "more values than bytes")
}

// FuzzResponseDecoding feeds decodeResponse any bytes: it answers or
// refuses, never panics, and what it answers encodes back to the same
// response.
func FuzzResponseDecoding(f *testing.F) {
	f.Add(encodeResponse(Response{Status: 201, Header: http.Header{"Location": {"/v1/payments/pay_1"}}, Body: []byte("{}"), ResourceID: "pay_1"}))
	f.Add(encodeResponse(Response{Status: 200, Header: http.Header{"X": nil, "Y": {}}, Body: []byte{}}))
	f.Add(encodeResponse(Response{}))
	f.Add([]byte{})
	f.Add([]byte{0, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		resp, err := decodeResponse(b)
		if err != nil {
			return
		}
		encoded := encodeResponse(resp)
		require.Len(t, encoded, encodedResponseLen(resp))
		again, err := decodeResponse(encoded)
		require.NoError(t, err)
		assert.Equal(t, resp, again)
	})
}
