package idem

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// A credential in the query string is never written to the keystore; it
// is sent on every attempt of this process and required after a restart.
func TestSecretQueryParamsStayOutOfTheKeystore(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var queries []string
	f := newFront(t, "http://127.0.0.1:9", func(n int, w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
		if n == 1 {
			answer(w, http.StatusServiceUnavailable, nil, "")
			return true
		}
		answer(w, http.StatusCreated, nil, "")
		return true
	})
	path := filepath.Join(t.TempDir(), "intents.db")
	c, err := New(append(fastOptions(), WithBoltStore(path, nil), WithSecretQueryParams("sessionKey"))...)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, f.URL+"/v1/payments?access_token=sekrit-token&sessionkey=sekrit-session&currency=EUR", strings.NewReader(`{"amount":1}`))
	require.NoError(t, err)
	in := begin(t, c, "query", req)
	assert.NotContains(t, in.URL, "sekrit")
	assert.Contains(t, in.URL, "currency=EUR")
	_, err = c.Do(context.Background(), in)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	for _, q := range queries {
		assert.Contains(t, q, "access_token=sekrit-token", "every attempt carries it")
		assert.Contains(t, q, "sessionkey=sekrit-session")
	}

	st, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	defer st.Close()
	recs, err := st.List(context.Background(), keystore.Filter{})
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.NotContains(t, recs[0].URL, "sekrit")
	assert.Contains(t, recs[0].SecretHeaders, "?access_token")
}

// After a restart, an intent begun with a query credential is not sent
// without it.
func TestSecretQueryParamIsRequiredOnResume(t *testing.T) {
	t.Parallel()
	store := keystore.NewMemory()
	first := newTestClient(t, WithStore(nopCloseStore{store}))
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:9/v1/payments?api_key=k1", strings.NewReader(`{"amount":1}`))
	require.NoError(t, err)
	in := begin(t, first, "", req)

	second := newTestClient(t, WithStore(nopCloseStore{store}))
	_, err = second.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrCredentialsMissing)
	assert.ErrorContains(t, err, "api_key")
}
