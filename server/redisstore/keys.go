package redisstore

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/idemkit/idem/server"
)

// KeyGroups is how many groups the store's keys fall into. Each group's
// keys share one Redis Cluster hash tag, hence one slot, so every script
// (which touches a record, its group's expiry index, and an effect's keys
// of the same principal) runs on one node; the groups spread a store over
// up to this many nodes. A principal's keys are all in one group.
const KeyGroups = 64

// keys names the Redis keys of one store. newKeys fills in the start of
// each group's keys and each group's expiry index once, so naming a
// record's keys builds one string; a keys{prefix} literal builds them
// each time.
type keys struct {
	prefix  string
	groups  []string // group(g), by g
	indexes []string // expiriesOf(g), by g
}

// newKeys returns the keys of a store with prefix, the per-group names
// worked out.
func newKeys(prefix string) keys {
	k := keys{prefix: prefix}
	groups, indexes := make([]string, KeyGroups), make([]string, KeyGroups)
	for g := range KeyGroups {
		groups[g], indexes[g] = k.group(g), k.expiriesOf(g)
	}
	k.groups, k.indexes = groups, indexes
	return k
}

// recordKeys returns the two keys of every script on the record of
// (scope, key): the record, then its group's expiry index.
func (k keys) recordKeys(scope server.Scope, key string) []string {
	g := groupOf(scope.Principal)
	if k.groups == nil {
		return []string{recordName(k.group(g), scope, key), k.expiriesOf(g)}
	}
	return []string{recordName(k.groups[g], scope, key), k.indexes[g]}
}

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
	return recordName(k.principalGroup(scope.Principal), scope, key)
}

// recordName is the record key of (scope, key) in the group whose keys
// start with start, built in one allocation.
func recordName(start string, scope server.Scope, key string) string {
	sum := digest(scope.Principal, scope.Method, scope.Route, key)
	var b strings.Builder
	b.Grow(len(start) + len("rec:") + hex.EncodedLen(len(sum)))
	b.WriteString(start)
	b.WriteString("rec:")
	var h [2 * len(sum)]byte
	hex.Encode(h[:], sum[:])
	b.Write(h[:])
	return b.String()
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
	sum := digest(parts...)
	return hex.EncodeToString(sum[:])
}

// digest is Digest's 16 bytes. The length-prefixed parts are hashed from
// one buffer, on the stack when they are short.
func digest(parts ...string) [16]byte {
	buf := make([]byte, 0, 512)
	for _, p := range parts {
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(p)))
		buf = append(buf, p...)
	}
	sum := sha256.Sum256(buf)
	return [16]byte(sum[:16])
}
