package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

func TestHeaderCodecRoundTrips(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]http.Header{
		"empty":          {},
		"one value":      {"Content-Type": {"application/json"}},
		"repeated":       {"Set-Cookie": {"a=1", "b=2"}, "Vary": {"Accept", "Origin"}},
		"obs-text":       {"X-Bin": {"caf\xe9", "\x00\xff\x80"}},
		"empty value":    {"X-Empty": {""}},
		"no values":      {"X-None": {}},
		"odd name bytes": {"x lower\xff": {"v"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := server.EncodeHeader(h)
			require.NoError(t, err)
			got, err := server.DecodeHeader(b)
			require.NoError(t, err)
			assert.Equal(t, len(h), len(got))
			for k, vs := range h {
				assert.Equal(t, len(vs), len(got[k]), "values of %q", k)
				for i, v := range vs {
					assert.Equal(t, v, got[k][i], "value %d of %q", i, k)
				}
			}
		})
	}
}

// A nil header and no bytes stand for each other, so a response stored
// without headers replays without them.
func TestHeaderCodecNil(t *testing.T) {
	t.Parallel()
	b, err := server.EncodeHeader(nil)
	require.NoError(t, err)
	assert.Nil(t, b)
	for _, empty := range [][]byte{nil, {}} {
		h, err := server.DecodeHeader(empty)
		require.NoError(t, err)
		assert.Nil(t, h)
	}
}

func TestDecodeHeaderRejectsCorruptBytes(t *testing.T) {
	t.Parallel()
	valid, err := server.EncodeHeader(http.Header{"Content-Type": {"application/json"}})
	require.NoError(t, err)
	for name, b := range map[string][]byte{
		"garbage":   []byte("not a header"),
		"truncated": valid[:len(valid)/2],
		"one byte":  {0xff},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h, err := server.DecodeHeader(b)
			assert.ErrorContains(t, err, "corrupt")
			assert.Nil(t, h)
		})
	}
}

// Whatever bytes a header holds come back unchanged; whatever bytes a
// store hands back either decode or fail with an error, never a panic.
func FuzzHeaderCodec(f *testing.F) {
	f.Add("Content-Type", "application/json", "text/plain", []byte(nil))
	f.Add("X-Bin", "caf\xe9", "\x00\xff", []byte{0x0d, 0xff, 0x81, 0x04})
	f.Add("", "", "", []byte("garbage"))
	f.Add("Set-Cookie", "a=1", "b=2", []byte{})
	f.Fuzz(func(t *testing.T, name, first, second string, stored []byte) {
		want := http.Header{name: {first, second}}
		b, err := server.EncodeHeader(want)
		require.NoError(t, err)
		got, err := server.DecodeHeader(b)
		require.NoError(t, err)
		assert.Equal(t, want, got)

		if h, err := server.DecodeHeader(stored); err != nil {
			assert.Nil(t, h)
		}
	})
}
