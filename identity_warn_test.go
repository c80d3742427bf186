package idem

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/idemkit/idem/keystore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// onlyStore hides every optional interface of the store it wraps, as a
// wrapper written against keystore.Store alone does.
type onlyStore struct{ keystore.Store }

// A keystore that cannot find a name under other principals weakens the
// identity check; New says so instead of leaving it silent.
func TestNewWarnsOfAKeystoreWithoutNamesakes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		store keystore.Store
		warns bool
	}{
		{keystore.NewMemory(), false},
		{onlyStore{keystore.NewMemory()}, true},
	} {
		var logs bytes.Buffer
		c, err := New(WithStore(tc.store), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		require.NoError(t, err)
		assert.Equal(t, tc.warns, bytes.Contains(logs.Bytes(), []byte("keystore.NameScanner")), "%T: %s", tc.store, logs.String())
		require.NoError(t, c.Close())
	}
}
