package keystore

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenPathIsBolt(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "intents.db")
	st, err := Open(context.Background(), path, WithBoltOptions(&BoltOptions{NoSync: true}), WithOpenerSetting("unused", 1))
	require.NoError(t, err)
	defer st.Close()
	b, ok := st.(*Bolt)
	require.True(t, ok, "a path opens a bbolt keystore, got %T", st)
	assert.Equal(t, path, b.Path())
	assert.FileExists(t, path)
}

func TestOpenRejectsWhatItCannotOpen(t *testing.T) {
	t.Parallel()
	for _, loc := range []string{"", "  ", "mysql://app:s3cret@db/x", "file:///tmp/x.db", "redis://h:6379"} {
		_, err := Open(context.Background(), loc)
		require.Error(t, err, "%q", loc)
		assert.Contains(t, err.Error(), "want a file path or a postgres://", "%q", loc)
		assert.NotContains(t, err.Error(), "s3cret")
		assert.False(t, IsPostgresLocation(loc))
	}
}

func TestRedactLocation(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "/var/lib/idem.db", RedactLocation("/var/lib/idem.db"))
	assert.Equal(t, "postgres://app:xxxxx@db:5432/pay", RedactLocation("postgres://app:pw@db:5432/pay"))
	assert.Equal(t, "postgres://db/pay", RedactLocation("postgres://db/pay"))
}

// This package's tests do not import pgkeystore, so no opener is
// registered for Postgres URLs: Open names the import that adds one.
func TestOpenPostgresWithoutItsPackageNamesTheImport(t *testing.T) {
	t.Parallel()
	for _, loc := range []string{"postgres://app:s3cret@db/pay", "PostgreSQL://db/pay"} {
		_, err := Open(context.Background(), loc)
		require.ErrorIs(t, err, ErrNoOpener, "%q", loc)
		var missing *MissingOpenerError
		require.ErrorAs(t, err, &missing)
		assert.Equal(t, "github.com/idemkit/idem/keystore/pgkeystore", missing.Import)
		assert.Contains(t, err.Error(), `add import _ "github.com/idemkit/idem/keystore/pgkeystore"`)
		assert.NotContains(t, err.Error(), "s3cret")
		assert.True(t, IsPostgresLocation(loc))
	}
}

// openTestKey is the setting the test opener reads.
type openTestKey struct{}

// registerTestOpeners registers the tests' schemes once per process: the
// registry is global, and a scheme registered twice panics (-count=2 runs
// the tests again in the same process).
var registerTestOpeners = sync.OnceFunc(func() {
	RegisterOpener("Idem-Open-Test", func(_ context.Context, location string, s OpenerSettings) (Store, error) {
		if s.Value(openTestKey{}) != "memory" {
			return nil, errors.New("refused " + RedactLocation(location))
		}
		return NewMemory(), nil
	})
	RegisterOpener("idem-nil-test", func(context.Context, string, OpenerSettings) (Store, error) { return nil, nil })
})

// An opener registered for a scheme gets its URLs and the settings
// meant for it; its errors are named by the redacted location.
func TestOpenUsesARegisteredOpener(t *testing.T) {
	t.Parallel()
	registerTestOpeners()
	st, err := Open(context.Background(), "idem-open-test://u:s3cret@h/x", WithOpenerSetting(openTestKey{}, "memory"))
	require.NoError(t, err)
	assert.IsType(t, &Memory{}, st)
	require.NoError(t, st.Close())

	_, err = Open(context.Background(), "IDEM-OPEN-TEST://u:s3cret@h/x")
	require.Error(t, err)
	assert.Equal(t, "keystore idem-open-test://u:xxxxx@h/x: refused idem-open-test://u:xxxxx@h/x", strings.ToLower(err.Error()))
	assert.False(t, IsPostgresLocation("idem-open-test://h/x"))

	assert.Panics(t, func() {
		RegisterOpener("idem-open-test", func(context.Context, string, OpenerSettings) (Store, error) { return nil, nil })
	},
		"a scheme is registered once")
	assert.Panics(t, func() { RegisterOpener("", nil) })
}

func TestOpenRefusesAnOpenerThatReturnsNothing(t *testing.T) {
	t.Parallel()
	registerTestOpeners()
	_, err := Open(context.Background(), "idem-nil-test://h/x")
	assert.ErrorContains(t, err, "returned no store")
}
