package saga

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// keyDomain separates saga keys from every other use of the same hash.
const keyDomain = "idem-saga-key-v1"

// Roles of a derived key: a step's own request, or its compensation.
const (
	roleStep         = "step"
	roleCompensation = "compensation"
)

// DeriveStepKey is the idempotency key of a step (compensation false) or
// of its compensation (true): HMAC-SHA-256, keyed by secret (empty when
// none), over the length-prefixed fields "idem-saga-key-v1", scope, run
// id, step name and role ("step" or "compensation"), its first 16 bytes
// written as a version 8 UUID (RFC 9562, section 5.8). The same inputs
// give the same key on every machine, so the key survives the loss of
// the keystore; every field is length-prefixed, so no two inputs hash the
// same bytes.
//
// Without a secret anyone who knows the inputs can compute the key,
// which is harmless on a server that scopes keys by caller (the IETF
// draft asks it to); with one (WithKeySecret) the keys cannot be guessed.
// Put a tenant into scope (WithScope) when one client serves several.
func DeriveStepKey(secret []byte, scope, runID, step string, compensation bool) string {
	role := roleStep
	if compensation {
		role = roleCompensation
	}
	mac := hmac.New(sha256.New, secret)
	var buf []byte
	for _, f := range [...]string{keyDomain, scope, runID, step, role} {
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(f)))
		buf = append(buf, f...)
	}
	mac.Write(buf)
	var u [16]byte
	copy(u[:], mac.Sum(nil))
	u[6] = u[6]&0x0f | 0x80 // version 8
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:], u[10:])
	return string(s[:])
}
