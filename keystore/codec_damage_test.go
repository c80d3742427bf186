package keystore

import (
	"encoding/binary"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// maxDamageEdits bounds the edits one fuzz input makes: enough for any
// realistic damage, and fewer than the 33 it takes to turn a checksummed
// record into one that reads as an unchecked (encoding 1) record.
const maxDamageEdits = 16

// damage applies to a copy of data the edits ops describes, 4 bytes each:
// the kind (flip, insert, delete), a position (2 bytes, modulo the
// length) and a value (the bits to flip, or the byte to insert).
func damage(data, ops []byte) []byte {
	out := append([]byte(nil), data...)
	for i := 0; i+4 <= len(ops) && i/4 < maxDamageEdits; i += 4 {
		kind, v := ops[i]%3, ops[i+3]
		pos := int(binary.BigEndian.Uint16(ops[i+1 : i+3]))
		switch {
		case kind == 0 && len(out) > 0:
			out[pos%len(out)] ^= v
		case kind == 1:
			pos %= len(out) + 1
			out = append(out[:pos], append([]byte{v}, out[pos:]...)...)
		case kind == 2 && len(out) > 0:
			pos %= len(out)
			out = append(out[:pos], out[pos+1:]...)
		}
	}
	return out
}

// damageRecord is a record whose every field is set, so damage anywhere
// in its encoding lands in something that matters.
func damageRecord() *Record {
	r := fullRecord()
	r.Host = "pay.internal.example:8443"
	r.AcceptedAt = r.UpdatedAt
	r.MayHaveExecuted = true
	r.Principal = "0f1e2d3c4b5a6978"
	r.SecretHeaders = []string{"Authorization"}
	r.Body = []byte(`{"amount":777,"currency":"EUR","to":"127.0.0.1:18777"}`)
	r.Reconciliations = []Reconciliation{{Outcome: ReconciledUnknown, Source: "reconciler", At: r.UpdatedAt, Note: "not found yet"}}
	r.Response.Header = http.Header{"Location": {"/v1/payments/pay_777"}}
	return r
}

// FuzzDamagedRecord checks that damage to a stored record is either
// detected (ErrCorrupt) or harmless (the same record), never a changed
// record: two flipped bytes once made a resume pay 977 instead of 777.
func FuzzDamagedRecord(f *testing.F) {
	data, err := encodeRecord(damageRecord())
	require.NoError(f, err)
	want, err := decodeRecord("k1", data)
	require.NoError(f, err)
	amount := uint16(len(data) - len(`0,"currency":"EUR","to":"127.0.0.1:18777"}`))
	seed := func(edits ...[4]byte) {
		var ops []byte
		for _, e := range edits {
			ops = append(ops, e[:]...)
		}
		f.Add(ops)
	}
	seed()
	seed([4]byte{0, byte(amount >> 8), byte(amount), 0x0e})                      // 7 -> 9
	seed([4]byte{0, 0, 0, 0x03}, [4]byte{2, 0, 1, 0}, [4]byte{2, 0, 1, 0})       // encoding 1, less checksum
	seed([4]byte{1, 0, 40, ' '}, [4]byte{2, 0xff, 0xff, 0}, [4]byte{0, 0, 1, 1}) // insert, delete, flip

	f.Fuzz(func(t *testing.T, ops []byte) {
		damaged := damage(data, ops)
		got, err := decodeRecord("k1", damaged)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
		} else {
			require.Equal(t, want, got, "damage changed the record without being detected")
		}
		sum, err := decodeSummary("k1", damaged)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
		} else {
			require.Equal(t, recordSummary{Name: want.Name, State: want.State,
				CreatedAt: want.CreatedAt, UpdatedAt: want.UpdatedAt, Purged: want.Purged}, sum)
		}
	})
}

// The fault as it was seen: 100 random two-byte flips of one record.
func TestTwoFlippedBytesNeverChangeARecord(t *testing.T) {
	t.Parallel()
	data, err := encodeRecord(damageRecord())
	require.NoError(t, err)
	want, err := decodeRecord("k1", data)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	for range 100 {
		d := append([]byte(nil), data...)
		for range 2 {
			d[rng.IntN(len(d))] ^= 1 << rng.IntN(8)
		}
		got, err := decodeRecord("k1", d)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			continue
		}
		require.Equal(t, want, got)
	}
}
