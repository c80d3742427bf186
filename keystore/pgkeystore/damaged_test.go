package pgkeystore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// A row that fails its checksum is read as stored, named by its name
// column, and replaced by a placeholder that keeps its key and name.
func TestPostgresRepairsADamagedRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := newPostgresTestSchema(t)
	p := openPostgresIn(t, schema, nil)
	scoped := keystore.ScopedName("order-1", "4acf5e84")
	sound, named := pendingRecord(1), pendingRecord(2)
	named.Name = scoped
	for _, r := range []*keystore.Record{sound, named} {
		_, _, err := p.Create(ctx, r)
		require.NoError(t, err)
	}
	tamper(t, p, schema, `body = convert_to('{"amount":977}', 'UTF8')`, named.Key)

	_, err := p.Damaged(ctx, sound.Key)
	assert.ErrorIs(t, err, keystore.ErrNotDamaged)
	_, err = p.Damaged(ctx, "nope")
	assert.ErrorIs(t, err, keystore.ErrNotFound)
	d, err := p.Damaged(ctx, named.Key)
	require.NoError(t, err)
	assert.Equal(t, scoped, d.Name)
	assert.Contains(t, string(d.Raw), `"fingerprint":"fp-2"`, "the row as stored")
	assert.ErrorIs(t, d.Why, keystore.ErrCorrupt)

	ph := keystore.Placeholder(d, "alice", "row in key-0002.json", time.Now())
	tamper(t, p, schema, `attempts = 7`, named.Key)
	assert.ErrorIs(t, p.ReplaceDamaged(ctx, d, ph), keystore.ErrDamageChanged, "only what was read is replaced")
	d, err = p.Damaged(ctx, named.Key)
	require.NoError(t, err)
	require.NoError(t, p.ReplaceDamaged(ctx, d, ph))

	got, err := p.GetByName(ctx, scoped)
	require.NoError(t, err)
	assert.Equal(t, named.Key, got.Key)
	assert.Equal(t, keystore.Expired, got.State)
	assert.Equal(t, "4acf5e84", got.Principal)
	_, err = p.List(ctx, keystore.Filter{})
	assert.NoError(t, err, "nothing damaged is left")
	assert.ErrorIs(t, p.ReplaceDamaged(ctx, d, ph), keystore.ErrNotDamaged)
}
