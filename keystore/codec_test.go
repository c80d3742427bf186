package keystore

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fullRecord() *Record {
	zone := time.FixedZone("CET", 3600)
	return &Record{
		Key: "k1", Name: "order-1", Method: "POST", URL: "https://api.example.com/v1/payments",
		Header:      http.Header{"Content-Type": {"application/json"}},
		Body:        []byte{0, 1, 2, 0xff},
		Fingerprint: "sha256:abc", State: Accepted,
		CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 6, zone),
		UpdatedAt: time.Date(2025, 1, 2, 3, 4, 6, 7, zone),
		Attempts:  3,
		Response:  &Response{Status: 202, Header: http.Header{"Location": {"/ops/1"}}, Body: []byte("{}")},
		Operation: "/ops/1", LastError: "boom",
	}
}

func TestCodecRoundTrip(t *testing.T) {
	t.Parallel()
	r := fullRecord()
	data, err := encodeRecord(r)
	require.NoError(t, err)
	assert.Equal(t, recordEncodingV2, data[0])
	assert.Equal(t, time.FixedZone("CET", 3600), r.CreatedAt.Location(), "encoding leaves the input alone")

	got, err := decodeRecord("k1", data)
	require.NoError(t, err)
	assert.Equal(t, time.UTC, got.CreatedAt.Location(), "stored in UTC")
	assert.True(t, r.CreatedAt.Equal(got.CreatedAt))
	assert.True(t, r.UpdatedAt.Equal(got.UpdatedAt))
	got.CreatedAt, got.UpdatedAt = r.CreatedAt, r.UpdatedAt
	assert.Equal(t, r, got)

	sum, err := decodeSummary("k1", data)
	require.NoError(t, err)
	assert.Equal(t, recordSummary{Name: "order-1", State: Accepted, CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC()}, sum)
}

func TestCodecRejectsDamage(t *testing.T) {
	t.Parallel()
	good, err := encodeRecord(fullRecord())
	require.NoError(t, err)
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)-10] ^= 0x01
	badSum := append([]byte(nil), good...)
	badSum[5] ^= 0x80
	cases := map[string][]byte{
		"empty":           nil,
		"unknown version": append([]byte{3}, good[1:]...),
		"bad json":        []byte{recordEncodingV1, '{', '"'},
		"wrong type":      []byte{recordEncodingV1, '[', ']'},
		"truncated":       good[:len(good)/2],
		"no checksum":     good[:20],
		"flipped byte":    flipped,
		"bad checksum":    badSum,
		"read as v1":      append([]byte{recordEncodingV1}, good[1:]...),
	}
	for name, data := range cases {
		_, err := decodeRecord("k1", data)
		assert.ErrorIs(t, err, ErrCorrupt, name)
		assert.ErrorContains(t, err, "record "+keyRef("k1"), name)
		assert.NotContains(t, err.Error(), "k1", "%s: the raw key never appears", name)
		_, err = decodeSummary("k1", data)
		assert.ErrorIs(t, err, ErrCorrupt, name)
	}
	_, err = decodeRecord("other", good)
	assert.ErrorIs(t, err, ErrCorrupt, "a record stored under another key")
	assert.ErrorContains(t, err, "record "+keyRef("other")+" holds "+keyRef("k1"))
	assert.NotContains(t, err.Error(), "k1")
	assert.NotContains(t, err.Error(), "other")
}

// Records written before checksums (encoding 1) are still read.
func TestCodecReadsV1Records(t *testing.T) {
	t.Parallel()
	r := fullRecord()
	js, err := json.Marshal(r)
	require.NoError(t, err)
	got, err := decodeRecord("k1", append([]byte{recordEncodingV1}, js...))
	require.NoError(t, err)
	assert.True(t, r.CreatedAt.Equal(got.CreatedAt))
	assert.Equal(t, r.Body, got.Body)
	assert.Equal(t, r.Response, got.Response)
}

// FuzzDecodeRecord checks that no stored bytes make decoding panic, and
// that whatever decodes encodes back to the same record.
func FuzzDecodeRecord(f *testing.F) {
	good, err := encodeRecord(fullRecord())
	require.NoError(f, err)
	f.Add(good)
	f.Add([]byte{})
	f.Add([]byte{recordEncodingV1})
	f.Add([]byte{recordEncodingV1, 'n', 'u', 'l', 'l'})
	f.Add([]byte{recordEncodingV1, '{', '}'})
	f.Add([]byte(`{"key":"k1"}`))
	f.Add(append([]byte{recordEncodingV1}, `{"key":"k1","created_at":"x"}`...))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := decodeRecord("k1", data)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		again, err := encodeRecord(rec)
		require.NoError(t, err)
		back, err := decodeRecord("k1", again)
		require.NoError(t, err)
		a, _ := json.Marshal(rec)
		b, _ := json.Marshal(back)
		require.JSONEq(t, string(a), string(b))
	})
}
