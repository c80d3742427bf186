package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
)

// MinDownstreamSecret is the shortest secret WithDownstreamSecret takes,
// in bytes.
const MinDownstreamSecret = 16

// maxDownstreamPurpose bounds a purpose, which names a call, not data.
const maxDownstreamPurpose = 128

// downstreamDomain opens every MAC DownstreamKey computes, so its keys
// never equal another derivation's over the same fields; v1 names the
// layout.
const downstreamDomain = "idem-downstream-key-v1"

// Errors of DownstreamKey.
var (
	// ErrNotHeld: the request (or context) did not come through the
	// idempotency layer: no guarded route, no key, or not inside Once.
	// There is no inbound key to derive a downstream key from.
	ErrNotHeld = errors.New("server: the request holds no idempotency key of the layer (not a guarded request with a key)")
	// ErrNoDownstreamSecret: the layer was built without
	// WithDownstreamSecret, or with a secret shorter than
	// MinDownstreamSecret bytes.
	ErrNoDownstreamSecret = errors.New("server: no downstream secret (WithDownstreamSecret) to derive keys with")
	// ErrDownstreamPurpose: the purpose is empty, longer than 128 bytes,
	// or holds a byte outside printable ASCII.
	ErrDownstreamPurpose = errors.New("server: a downstream key's purpose must be 1 to 128 printable ASCII bytes")
)

// WithDownstreamSecret sets the secret DownstreamKey derives provider
// keys with: at least MinDownstreamSecret (16) random bytes, the same on
// every replica and kept across restarts (a new secret gives a retried
// request new keys, and the provider a second call). New refuses a
// shorter one. It also applies to Once, for consumers that call a
// provider. The slice is copied.
func WithDownstreamSecret(secret []byte) Option {
	own := append([]byte(nil), secret...)
	return func(c *config) {
		c.downstreamSecret = own
		c.downstreamSet = true
	}
}

// checkDownstreamSecret is New's check of WithDownstreamSecret.
func checkDownstreamSecret(cfg *config) error {
	if cfg.downstreamSet && len(cfg.downstreamSecret) < MinDownstreamSecret {
		return fmt.Errorf("server: WithDownstreamSecret: need at least %d bytes, got %d", MinDownstreamSecret, len(cfg.downstreamSecret))
	}
	return nil
}

// DownstreamKey is the idempotency key for a call the handler of r makes
// to another service (a payment provider) on behalf of r: the same for
// every retry of r, different for another principal, route or inbound key,
// and for another purpose ("charge", "refund") within one request. Use
// it as the key of that call (idem.WithIntentKey with Client.BeginTx), so
// a handler that runs again after a crash, or a completer that finishes
// its work, sends the provider the key it has seen.
//
// The inbound key alone is never used: two tenants may send the same
// key, and the provider scopes keys by the API's own account, where both
// would collide (the provider would hand one tenant the other's charge).
// The key is an HMAC-SHA-256, keyed by the layer's WithDownstreamSecret,
// over the scope (principal, method, route), the inbound key and
// purpose, each prefixed by its length; its first 16 bytes are written
// as a version-8 UUID (RFC 9562), 36 characters, which providers' key
// formats take.
//
// It fails with ErrNotHeld when r did not come through the layer with a
// key, ErrNoDownstreamSecret when the layer has no secret, and
// ErrDownstreamPurpose for an unusable purpose.
func DownstreamKey(r *http.Request, purpose string) (string, error) {
	if r == nil {
		return "", ErrNotHeld
	}
	h, ok := HeldFrom(r.Context())
	if !ok {
		return "", ErrNotHeld
	}
	return h.DownstreamKey(purpose)
}

// DownstreamKey is the package's DownstreamKey for the request h is
// held for (a handler's, or Once's fn's, through HeldFrom).
func (h *Held) DownstreamKey(purpose string) (string, error) {
	if h == nil || h.Reservation.Key == "" {
		return "", ErrNotHeld
	}
	if len(h.downstreamSecret) < MinDownstreamSecret {
		return "", ErrNoDownstreamSecret
	}
	if !validPurpose(purpose) {
		return "", fmt.Errorf("%w: got %q", ErrDownstreamPurpose, purpose)
	}
	s := h.Reservation.Scope
	return deriveDownstreamKey(h.downstreamSecret, s.Principal, s.Method, s.Route, h.Reservation.Key, purpose), nil
}

// validPurpose: 1 to 128 bytes of printable ASCII.
func validPurpose(p string) bool {
	if p == "" || len(p) > maxDownstreamPurpose {
		return false
	}
	for i := range len(p) {
		if p[i] < 0x21 || p[i] > 0x7e {
			return false
		}
	}
	return true
}

// deriveDownstreamKey is the MAC DownstreamKey documents, as a UUID.
func deriveDownstreamKey(secret []byte, fields ...string) string {
	mac := hmac.New(sha256.New, secret)
	var buf []byte
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(downstreamDomain)))
	buf = append(buf, downstreamDomain...)
	for _, f := range fields {
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(f)))
		buf = append(buf, f...)
	}
	mac.Write(buf)
	var u [16]byte
	copy(u[:], mac.Sum(nil))
	u[6] = u[6]&0x0f | 0x80 // version 8
	u[8] = u[8]&0x3f | 0x80 // RFC 9562 variant
	var out [36]byte
	hex.Encode(out[0:8], u[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], u[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], u[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], u[8:10])
	out[23] = '-'
	hex.Encode(out[24:], u[10:])
	return string(out[:])
}
