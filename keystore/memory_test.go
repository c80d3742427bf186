package keystore_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/keystore/storetest"
)

func TestMemoryContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) keystore.Store { return keystore.NewMemory() })
}

// Memory keeps only its own encoding of an updated record (Update and
// AdoptUpdate alike): changing the record, its answer's header included,
// after the write returns changes nothing stored. The client relies on it
// to store an answer without copying its header first.
func TestMemoryUpdateKeepsNothingOfTheRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, adopt := range []bool{false, true} {
		m := keystore.NewMemory()
		now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
		r := &keystore.Record{
			Key: "k", Method: http.MethodPost, URL: "https://api.example.com/v1", Fingerprint: "fp",
			State: keystore.Pending, CreatedAt: now, UpdatedAt: now,
		}
		_, _, err := m.Create(ctx, r)
		require.NoError(t, err)
		u := r.Clone()
		u.State = keystore.Succeeded
		u.Response = &keystore.Response{Status: 201, Header: http.Header{"Location": {"/p/1"}}, Body: []byte(`{}`)}
		if adopt {
			require.NoError(t, m.AdoptUpdate(ctx, u))
		} else {
			require.NoError(t, m.Update(ctx, u))
		}
		u.Response.Header["Location"][0] = "/changed"
		u.Response.Header.Set("X-Added", "1")
		u.Response.Body[0] = 'X'
		got, err := m.Get(ctx, "k")
		require.NoError(t, err)
		assert.Equal(t, http.Header{"Location": {"/p/1"}}, got.Response.Header, "adopt=%t", adopt)
		assert.Equal(t, `{}`, string(got.Response.Body))
	}
}
