package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// gobHeaderVectors are headers as encoding/gob stored them before the
// compact form, each with the header it holds. Records written then
// must still replay.
var gobHeaderVectors = []struct {
	name   string
	stored string
	want   http.Header
}{
	{
		"two names",
		"\x17\xff\x81\x04\x01\x01\x06Header\x01\xff\x82\x00\x01\f\x01\xff\x80\x00\x00\v\x7f\x02\x01\x02\xff\x80\x00\x01\f\x00\x00:\xff\x82\x00\x02\fContent-Type\x01\x10application/json\bLocation\x01\f/payments/42",
		http.Header{"Content-Type": {"application/json"}, "Location": {"/payments/42"}},
	},
	{
		"repeated, obs-text and empty values",
		"\x17\xff\x81\x04\x01\x01\x06Header\x01\xff\x82\x00\x01\f\x01\xff\x80\x00\x00\v\x7f\x02\x01\x02\xff\x80\x00\x01\f\x00\x002\xff\x82\x00\x03\nSet-Cookie\x02\x03a=1\x03b=2\x05X-Bin\x02\x04caf\xe9\x03\x00\xff\x80\aX-Empty\x01\x00",
		http.Header{"Set-Cookie": {"a=1", "b=2"}, "X-Bin": {"caf\xe9", "\x00\xff\x80"}, "X-Empty": {""}},
	},
	{
		"empty",
		"\x17\xff\x81\x04\x01\x01\x06Header\x01\xff\x82\x00\x01\f\x01\xff\x80\x00\x00\v\x7f\x02\x01\x02\xff\x80\x00\x01\f\x00\x00\x04\xff\x82\x00\x00",
		http.Header{},
	},
}

func TestDecodeHeaderReadsGobRecords(t *testing.T) {
	t.Parallel()
	for _, v := range gobHeaderVectors {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			got, err := server.DecodeHeader([]byte(v.stored))
			require.NoError(t, err)
			assert.Equal(t, v.want, got)
		})
	}
}

// The compact form is a version byte then uvarints and bytes; its
// length is what that layout says, not gob's.
func TestEncodeHeaderCompactLayout(t *testing.T) {
	t.Parallel()
	b, err := server.EncodeHeader(http.Header{"Ab": {"x", ""}})
	require.NoError(t, err)
	assert.Equal(t, []byte{0x81, 1, 2, 'A', 'b', 2, 1, 'x', 0}, b)
}

func TestDecodeHeaderRejectsMalformedCompactForm(t *testing.T) {
	t.Parallel()
	for name, b := range map[string][]byte{
		"version only":       {0x81},
		"count too large":    {0x81, 0xff, 0xff, 0xff, 0xff, 0x0f},
		"name past the end":  {0x81, 1, 9, 'A'},
		"values past end":    {0x81, 1, 1, 'A', 3, 1, 'x'},
		"trailing bytes":     {0x81, 0, 0},
		"duplicate name":     {0x81, 2, 1, 'A', 0, 1, 'A', 0},
		"overlong uvarint":   {0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
		"unterminated count": {0x81, 0x80},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h, err := server.DecodeHeader(b)
			assert.ErrorContains(t, err, "corrupt")
			assert.Nil(t, h)
		})
	}
}

// Appending to one decoded name's values must not change another's:
// they share one backing array.
func TestDecodeHeaderValuesDoNotAlias(t *testing.T) {
	t.Parallel()
	b, err := server.EncodeHeader(http.Header{"A": {"1"}, "B": {"2"}})
	require.NoError(t, err)
	h, err := server.DecodeHeader(b)
	require.NoError(t, err)
	h.Add("A", "3")
	h.Add("B", "4")
	assert.Equal(t, []string{"1", "3"}, h["A"])
	assert.Equal(t, []string{"2", "4"}, h["B"])
}

// Whatever bytes a store hands back either decode, to a header that
// encodes and decodes to itself, or fail with an error, never a panic.
func FuzzDecodeHeader(f *testing.F) {
	for _, v := range gobHeaderVectors {
		f.Add([]byte(v.stored))
	}
	f.Add([]byte{0x81, 1, 2, 'A', 'b', 2, 1, 'x', 0})
	f.Add([]byte{0x81, 0})
	f.Add([]byte{0x81, 2, 1, 'A', 0, 1, 'A', 0})
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, stored []byte) {
		h, err := server.DecodeHeader(stored)
		if err != nil {
			assert.Nil(t, h)
			return
		}
		b, err := server.EncodeHeader(h)
		require.NoError(t, err)
		again, err := server.DecodeHeader(b)
		require.NoError(t, err)
		assert.Equal(t, len(h), len(again))
		for k, vs := range h {
			assert.Equal(t, len(vs), len(again[k]), "values of %q", k)
			for i, v := range vs {
				assert.Equal(t, v, again[k][i])
			}
		}
	})
}
