package idem

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The fingerprint is HMAC-SHA256 truncated to 16 bytes, for keys shorter,
// as long as and longer than a SHA-256 block, and any message: stores
// persist it, so it must never change.
func TestPrincipalMACIsHMACSHA256(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for _, keyLen := range []int{16, 43, 63, 64, 65, 100, 200} {
		for _, msgLen := range []int{0, 1, 55, 64, 119, 1000} {
			key := make([]byte, keyLen)
			msg := make([]byte, msgLen)
			for i := range key {
				key[i] = byte(r.Uint32())
			}
			for i := range msg {
				msg[i] = byte(r.Uint32())
			}
			want := hmac.New(sha256.New, key)
			want.Write(msg)
			got := macFinish(key, append(macStart(key, len(msg)), msg...))
			require.Equal(t, hex.EncodeToString(want.Sum(nil)[:16]), got, "key %d bytes, message %d bytes", keyLen, msgLen)
		}
	}
	// The default key, over an identity of the default principal.
	want := hmac.New(sha256.New, defaultPrincipalKey)
	want.Write([]byte("credentials\x00Authorization\x00Bearer t"))
	got := macFinish(defaultPrincipalKey, append(macStart(defaultPrincipalKey, 0), "credentials\x00Authorization\x00Bearer t"...))
	require.Equal(t, hex.EncodeToString(want.Sum(nil)[:16]), got)
}
