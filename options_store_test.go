package idem

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// A second store option closes the first: its file is free again.
func TestASecondStoreOptionReleasesTheFirst(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first.db"), filepath.Join(dir, "second.db")
	c, err := New(WithBoltStore(first, nil), WithBoltStore(second, nil))
	require.NoError(t, err)
	defer c.Close()
	again, err := keystore.OpenBolt(first, &keystore.BoltOptions{Timeout: 100 * time.Millisecond})
	require.NoError(t, err, "the first file is not held")
	require.NoError(t, again.Close())

	same, err := New(WithBoltStore(first, nil), WithBoltStore(first, nil))
	require.NoError(t, err, "the same file twice is reopened, not locked against itself")
	require.NoError(t, same.Close())
}

// A body already read by someone else is refused, not sent empty.
func TestBeginRefusesAConsumedBody(t *testing.T) {
	t.Parallel()
	c := newTestClient(t)
	req, err := http.NewRequest(http.MethodPost, "https://api.example.com/v1/payments", io.NopCloser(strings.NewReader(`{"amount":1}`)))
	require.NoError(t, err)
	req.ContentLength = 12
	_, _ = io.ReadAll(req.Body) // a logger read it
	_, err = c.Begin(context.Background(), "", req)
	require.ErrorIs(t, err, ErrInvalidRequest)
	assert.ErrorContains(t, err, "already read")
}

// failingStore is a real memory keystore whose Updates fail once armed.
type failingStore struct {
	keystore.Store
	fail bool
}

func (s *failingStore) Update(ctx context.Context, r *keystore.Record) error {
	if s.fail {
		return io.ErrUnexpectedEOF
	}
	return s.Store.Update(ctx, r)
}

// After a write that failed, the Intent shows what the keystore holds.
func TestIntentShowsTheStoredStateAfterAFailedWrite(t *testing.T) {
	t.Parallel()
	srv := newFront(t, "http://127.0.0.1:9", func(_ int, w http.ResponseWriter, _ *http.Request, _ http.Handler) bool {
		answer(w, http.StatusCreated, nil, `{"id":"pay_1"}`)
		return true
	})
	store := &failingStore{Store: keystore.NewMemory()}
	c := newTestClient(t, WithStore(store))
	in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "write-fails"))
	store.fail = true
	resp, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, Pending, in.State)
	assert.Zero(t, in.Attempts, "the keystore holds no attempt")
	assert.True(t, bytes.Contains([]byte(err.Error()), []byte("stays pending")))
}
