package redisstore

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemkit/idem/server"
)

// Two different (scope, key) tuples must never share a record key, however
// their parts are split: moving characters from one part to the next must
// change the digest.
func FuzzRecordKeysSeparateScopes(f *testing.F) {
	f.Add("tok", "POST", "/v1/payments", "k1", "tok", "POST", "/v1/payments", "k2")
	f.Add("a:b", "POST", "/r", "k", "a", "b:POST", "/r", "k")
	f.Add("ab", "", "", "", "a", "b", "", "")
	f.Add("", "", "", "", "", "", "", "")
	f.Add("t", "POST", "/v1/payments", "key\x00", "t", "POST", "/v1/payments", "key")
	k := keys{prefix: "idem:"}
	f.Fuzz(func(t *testing.T, p1, m1, r1, k1, p2, m2, r2, k2 string) {
		a := k.record(server.Scope{Principal: p1, Method: m1, Route: r1}, k1)
		b := k.record(server.Scope{Principal: p2, Method: m2, Route: r2}, k2)
		same := p1 == p2 && m1 == m2 && r1 == r2 && k1 == k2
		assert.Equal(t, same, a == b, "tuples %q and %q", []string{p1, m1, r1, k1}, []string{p2, m2, r2, k2})
	})
}
