package redisstore

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/idemkit/idem/internal/testserver"
)

// keys names the Redis keys of one store.
type keys struct{ prefix string }

// record is the hash holding the idempotency record of (scope, key). The
// parts are hashed length-prefixed, so no choice of separators in a
// principal, route or key can make two scopes collide, and raw keys never
// show up in key names.
func (k keys) record(scope testserver.Scope, key string) string {
	return k.prefix + "rec:" + digest(scope.Principal, scope.Method, scope.Route, key)
}

// expiries is the sorted set of records by when they are due to leave
// the store, which Sweep works through: a completed record at the end of
// its retention, a reservation at the end of its lease plus the grace.
func (k keys) expiries() string {
	return k.prefix + "expiries"
}

// payment is the hash holding one payment of principal.
func (k keys) payment(principal, id string) string {
	return k.prefix + "pay:" + digest(principal) + ":" + id
}

// payments is the sorted set listing principal's payments.
func (k keys) payments(principal string) string {
	return k.prefix + "pays:" + digest(principal)
}

// paymentCount counts the payments of every principal; its value also
// orders payments created at the same instant.
func (k keys) paymentCount() string {
	return k.prefix + "paycount"
}

// operation is the hash holding one operation of principal.
func (k keys) operation(principal, id string) string {
	return k.prefix + "op:" + digest(principal) + ":" + id
}

// digest hashes parts, each prefixed with its length.
func digest(parts ...string) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
