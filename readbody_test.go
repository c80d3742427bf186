package idem

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadUpToWhateverTheHint(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("0123456789", 300) // 3000 bytes, past the default first buffer
	for _, hint := range []int64{-1, 0, 1, 10, 2999, 3000, 3001, 1 << 20} {
		got, err := readUpTo(iotest.OneByteReader(strings.NewReader(body)), 1<<20, hint)
		require.NoError(t, err, "hint %d", hint)
		assert.Equal(t, body, string(got), "hint %d", hint)
	}
	got, err := readUpTo(strings.NewReader(body), 100, 3000)
	require.NoError(t, err)
	assert.Len(t, got, 100, "never more than the limit")

	got, err = readUpTo(iotest.DataErrReader(strings.NewReader("abc")), 10, 3)
	require.NoError(t, err, "data with io.EOF is a clean end")
	assert.Equal(t, "abc", string(got))

	_, err = readUpTo(iotest.ErrReader(io.ErrUnexpectedEOF), 10, 0)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

func TestReadBoundedRejectsOversizedBodies(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("x"), MaxBodySize+1)
	_, err := readBounded(bytes.NewReader(big), int64(len(big)))
	assert.ErrorIs(t, err, ErrInvalidRequest)
	_, err = readBounded(bytes.NewReader(big), 10) // a declared length that lies
	assert.ErrorIs(t, err, ErrInvalidRequest)
	got, err := readBounded(strings.NewReader(""), 0)
	require.NoError(t, err)
	assert.Nil(t, got, "an empty body reads as nil")
}

func TestCaptureStoresAHeaderTheCallerCannotReach(t *testing.T) {
	t.Parallel()
	resp := &http.Response{
		StatusCode:    201,
		Header:        http.Header{"Location": {"/x"}, "X-Empty": nil, "Connection": {"keep-alive"}},
		Body:          io.NopCloser(strings.NewReader(`{}`)),
		ContentLength: 2,
	}
	stored, _, err := capture(resp)
	require.NoError(t, err)
	resp.Header["Location"][0] = "/changed"
	assert.Equal(t, "/x", stored.Header.Get("Location"), "the stored header is a copy")
	assert.Contains(t, stored.Header, "X-Empty")
	assert.NotContains(t, stored.Header, "Connection")
	assert.Equal(t, `{}`, string(stored.Body))
}
