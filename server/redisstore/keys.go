package redisstore

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"github.com/idemkit/idem/server"
)

// keys names the Redis keys of one store.
type keys struct{ prefix string }

// record is the hash holding the idempotency record of (scope, key). The
// parts are hashed length-prefixed, so no choice of separators in a
// principal, route or key can make two scopes collide, and raw keys never
// show up in key names.
func (k keys) record(scope server.Scope, key string) string {
	return k.prefix + "rec:" + Digest(scope.Principal, scope.Method, scope.Route, key)
}

// expiries is the sorted set of records by when they are due to leave
// the store, which Sweep works through: a completed record at the end of
// its retention, a reservation at the end of its lease plus the grace.
func (k keys) expiries() string {
	return k.prefix + "expiries"
}

// Digest hashes parts, each prefixed with its length, for key names no
// choice of separators can make collide and that never show raw values.
func Digest(parts ...string) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
