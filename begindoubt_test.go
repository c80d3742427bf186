package idem

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/keystore/pgkeystore"
)

// postgresThroughProxy opens a Postgres keystore in a fresh schema whose
// connections go through an ack-dropping proxy armed for the message that
// carries key: the one that executes the INSERT (the statement's text
// travels apart, when it is prepared), so the write commits and only its
// acknowledgement is lost.
func postgresThroughProxy(t *testing.T, key string) (*pgkeystore.Store, *testenv.AckDropProxy, string, string) {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	schema := testenv.PostgresSchema(t, dsn, "idem_begin_doubt_")
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	proxy := testenv.StartAckDropProxy(t, u.Host, []byte(key))
	u.Host = proxy.Addr()
	ctx := context.Background()
	st, err := pgkeystore.Open(ctx, u.String(), &pgkeystore.Options{Schema: schema})
	require.NoError(t, err)
	return st, proxy, dsn, schema
}

// The INSERT of a new intent commits and its acknowledgement is lost:
// Begin asks the keystore under the key it chose, finds the intent and
// returns it. No orphan, one payment.
func TestBeginSettlesALostAcknowledgement(t *testing.T) {
	t.Parallel()
	const key = "3d0c8a52-1a55-4b8e-9c0a-5b7f3f0e9a11"
	st, proxy, _, _ := postgresThroughProxy(t, key)
	srv := idemtest.NewServer(t)
	c := newTestClient(t, WithStore(st), WithKeyGenerator(func() (string, error) { return key, nil }))
	proxy.Arm()
	in, err := c.Begin(context.Background(), "order-1/payment", paymentRequest(t, srv.URL, 100, "ack"))
	require.NoError(t, err)
	require.Equal(t, 1, proxy.Dropped(), "the acknowledgement was dropped")

	recs, err := st.List(context.Background(), keystore.Filter{})
	require.NoError(t, err)
	require.Len(t, recs, 1, "one intent, no orphan")
	assert.Equal(t, in.Key, recs[0].Key)

	again := begin(t, c, "order-1/payment", paymentRequest(t, srv.URL, 100, "ack"))
	assert.Equal(t, in.Key, again.Key)
	_, err = c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, 1, srv.PaymentCount())
}

// When the keystore cannot be asked after the lost acknowledgement, Begin
// says so with the key, and the intent can be resumed by it later.
func TestBeginThatCannotTellReturnsTheKey(t *testing.T) {
	t.Parallel()
	const key = "9b7e0f44-2c1d-4d3a-8f5e-0c6b1a2d3e4f"
	st, proxy, dsn, schema := postgresThroughProxy(t, key)
	c := newTestClient(t, WithStore(st), WithWriteGrace(300*time.Millisecond),
		WithKeyGenerator(func() (string, error) { return key, nil }))
	proxy.Arm()
	proxy.StopAfterDrop()
	_, err := c.Begin(context.Background(), "order-2/payment", paymentRequest(t, "https://api.example.com", 200, "lost"))
	require.ErrorIs(t, err, ErrIntentUncertain)
	var ue *UncertainIntentError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, key, ue.Key)
	assert.Equal(t, "order-2/payment", ue.Name)
	assert.NotContains(t, err.Error(), ue.Key, "errors show a key only by its hash")

	direct, err := pgkeystore.Open(context.Background(), dsn, &pgkeystore.Options{Schema: schema})
	require.NoError(t, err)
	later := newTestClient(t, WithStore(direct))
	in, err := later.Resume(context.Background(), ue.Key)
	require.NoError(t, err, "the intent the keystore did store is found by its key")
	assert.Equal(t, "order-2/payment", in.Name)
}

// A bbolt keystore on a full disk: every Begin either returns a stored
// intent or fails saying it was not stored; none leaves an orphan.
func TestBeginOnAFullDiskLeavesNoOrphan(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a small tmpfs as a full disk")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	path := filepath.Join(dir, "intents.db")
	c, err := New(WithBoltStore(path, nil))
	require.NoError(t, err)
	big := strings.Repeat("x", 200<<10)
	var stored []string
	var failed error
	for i := range 40 {
		req := paymentRequest(t, "https://api.example.com", 100+i, big+string(rune('a'+i%26)))
		in, err := c.Begin(context.Background(), "", req)
		if err != nil {
			failed = err
			break
		}
		stored = append(stored, in.Key)
	}
	require.Error(t, failed, "the disk filled up")
	assert.Contains(t, failed.Error(), "not stored")
	assert.NotErrorIs(t, failed, ErrIntentUncertain)
	pending, err := c.Pending(context.Background())
	require.NoError(t, err)
	got := make([]string, len(pending))
	for i, in := range pending {
		got[i] = in.Key
	}
	assert.ElementsMatch(t, stored, got, "exactly the intents Begin returned")
	_ = c.Close()
}
