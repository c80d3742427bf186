package idem

import (
	"net/http"
	"slices"
	"sync/atomic"
)

// principalMemo is the default principal Begin named last, with the
// credentials it named it from: a service sends most intents with one API
// key, and its fingerprint (an HMAC) and sorted names are then computed
// once instead of on every Begin. It holds a copy of those credentials,
// as the Client's local state does for the intents it has not settled.
type principalMemo struct {
	// names are the secret headers with a value, sorted (Record.SecretHeaders).
	names []string
	// values[i] are the values of names[i], in order.
	values    [][]string
	principal string
}

// principalMemoSlot holds the Client's last principalMemo.
type principalMemoSlot struct{ p atomic.Pointer[principalMemo] }

// lookup returns the memo's principal and names when the secret headers
// of sent (those secret names, canonical as sent's names are), the header
// of a request without secret query parameters, are exactly the
// credentials it was named from: the same names with values, and the
// same values, compared in constant time. The names are a copy.
func (s *principalMemoSlot) lookup(sent http.Header, secret map[string]bool) (string, []string, bool) {
	m := s.p.Load()
	if m == nil {
		return "", nil, false
	}
	withValues := 0
	for name, values := range sent {
		if len(values) > 0 && secret[name] {
			withValues++
		}
	}
	if withValues != len(m.names) {
		return "", nil, false
	}
	for i, name := range m.names {
		if !sameSecretValues(sent[name], m.values[i]) {
			return "", nil, false
		}
	}
	return m.principal, slices.Clone(m.names), true
}

// remember makes principal, named from the secret headers names of
// sent, the memo.
func (s *principalMemoSlot) remember(sent http.Header, names []string, principal string) {
	m := &principalMemo{names: slices.Clone(names), values: make([][]string, len(names)), principal: principal}
	for i, name := range names {
		m.values[i] = slices.Clone(sent[name])
	}
	s.p.Store(m)
}

// forget drops the memo, and with it the credentials it holds.
func (s *principalMemoSlot) forget() { s.p.Store(nil) }

// sameSecretValues reports whether a and b hold the same strings in the
// same order, in a time that depends on their lengths alone.
func sameSecretValues(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	same := true
	for i := range a {
		same = sameSecret(a[i], b[i]) && same
	}
	return same
}

// sameSecret reports whether a and b are equal, in a time that depends on
// their lengths alone.
func sameSecret(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	var diff byte
	for i := range len(a) {
		diff |= a[i] ^ b[i]
	}
	return diff == 0
}
