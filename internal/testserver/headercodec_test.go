package testserver_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
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
			b, err := testserver.EncodeHeader(h)
			require.NoError(t, err)
			got, err := testserver.DecodeHeader(b)
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
	b, err := testserver.EncodeHeader(nil)
	require.NoError(t, err)
	assert.Nil(t, b)
	for _, empty := range [][]byte{nil, {}} {
		h, err := testserver.DecodeHeader(empty)
		require.NoError(t, err)
		assert.Nil(t, h)
	}
}

func TestDecodeHeaderRejectsCorruptBytes(t *testing.T) {
	t.Parallel()
	valid, err := testserver.EncodeHeader(http.Header{"Content-Type": {"application/json"}})
	require.NoError(t, err)
	for name, b := range map[string][]byte{
		"garbage":   []byte("not a header"),
		"truncated": valid[:len(valid)/2],
		"one byte":  {0xff},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h, err := testserver.DecodeHeader(b)
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
		b, err := testserver.EncodeHeader(want)
		require.NoError(t, err)
		got, err := testserver.DecodeHeader(b)
		require.NoError(t, err)
		assert.Equal(t, want, got)

		if h, err := testserver.DecodeHeader(stored); err != nil {
			assert.Nil(t, h)
		}
	})
}
