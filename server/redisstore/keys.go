package redisstore

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"

	"github.com/idemkit/idem/server"
)

// KeyGroups is how many groups the store's keys fall into. Each group's
// keys share one Redis Cluster hash tag, hence one slot, so every script
// (which touches a record, its group's expiry index, and an effect's keys
// of the same principal) runs on one node; the groups spread a store over
// up to this many nodes. A principal's keys are all in one group.
const KeyGroups = 64

// keys names the Redis keys of one store.
type keys struct{ prefix string }

// groupOf returns the group of principal's keys.
func groupOf(principal string) int {
	sum := sha256.Sum256([]byte(principal))
	return int(binary.BigEndian.Uint16(sum[:2]) % KeyGroups)
}

// group returns the start of every key of group g: the prefix, then the
// group's hash tag. A prefix with a hash tag of its own wins (Redis hashes
// the first {…} of a key), putting the whole store in that one slot.
func (k keys) group(g int) string {
	return k.prefix + "{g" + strconv.Itoa(g) + "}:"
}

// principalGroup returns the start of every key of principal's group.
func (k keys) principalGroup(principal string) string {
	return k.group(groupOf(principal))
}

// record is the hash holding the idempotency record of (scope, key). The
// parts are hashed length-prefixed, so no choice of separators in a
// principal, route or key can make two scopes collide, and raw keys never
// show up in key names.
func (k keys) record(scope server.Scope, key string) string {
	return k.principalGroup(scope.Principal) + "rec:" + Digest(scope.Principal, scope.Method, scope.Route, key)
}

// expiries is the sorted set of the records of principal's group by when
// they are due to leave the store, which Sweep works through: a completed
// record at the end of its retention, a reservation at the end of its
// lease plus the grace.
func (k keys) expiries(principal string) string {
	return k.expiriesOf(groupOf(principal))
}

// expiriesOf is the expiry index of group g.
func (k keys) expiriesOf(g int) string {
	return k.group(g) + "expiries"
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
