package keystore

import (
	"context"
	"errors"
)

// PrincipalKeyKeeper is implemented by stores that keep the key of the
// principal fingerprint (see Record.Principal) with their records (Bolt,
// Memory), so that the key differs from keystore to keystore, yet every
// client of one keystore, the idem command's included, names a principal
// alike without being told the key.
type PrincipalKeyKeeper interface {
	// PrincipalKey returns the key stored with the records. When none is
	// stored yet it stores one first, atomically: fresh for a store
	// without records, legacy for a store that holds records already,
	// written by a build that fingerprinted principals under legacy,
	// whose names must stay resolvable.
	PrincipalKey(ctx context.Context, fresh, legacy []byte) ([]byte, error)
}

// MinPrincipalKeyLen is the shortest principal key a store keeps.
const MinPrincipalKeyLen = 16

// errShortPrincipalKey refuses a key too short to be a secret.
var errShortPrincipalKey = errors.New("keystore: a principal key needs at least 16 bytes")

var (
	_ PrincipalKeyKeeper = (*Bolt)(nil)
	_ PrincipalKeyKeeper = (*Memory)(nil)
)

// PrincipalKey implements PrincipalKeyKeeper.
func (m *Memory) PrincipalKey(ctx context.Context, fresh, legacy []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(fresh) < MinPrincipalKeyLen || len(legacy) < MinPrincipalKeyLen {
		return nil, errShortPrincipalKey
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, ErrClosed
	}
	if m.principalKey == nil {
		m.principalKey = append([]byte(nil), fresh...)
		if len(m.records) > 0 {
			m.principalKey = append([]byte(nil), legacy...)
		}
	}
	return append([]byte(nil), m.principalKey...), nil
}
