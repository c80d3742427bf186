package idemtest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The reference server takes both forms: graded with quoted keys, every
// check passes, and the quoted-key check sends the bare form first.
func TestRunConformance_QuotedKeyFormAgainstTheReferenceServer(t *testing.T) {
	t.Parallel()
	srv := NewServer(t)
	opts := srv.ConformanceOptions()
	opts.KeyForm = KeyFormQuoted
	results, err := RunConformance(t.Context(), srv.URL, opts)
	require.NoError(t, err)
	assert.Empty(t, failedIDs(results))
	for _, r := range results {
		if r.ID == CheckQuotedKey {
			assert.True(t, r.Passed, r.Detail)
			assert.Contains(t, r.Detail, `k then "k"`)
		}
	}
}

// keyFormRecorder answers every POST 400 and keeps the key header values it
// saw, in order.
type keyFormRecorder struct {
	mu     sync.Mutex
	values [][]string
}

func (k *keyFormRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	k.values = append(k.values, r.Header.Values("Idempotency-Key"))
	k.mu.Unlock()
	w.WriteHeader(http.StatusBadRequest)
}

// Each form is what goes on the wire: the quoted form an RFC 8941
// String of the bare key.
func TestRunConformance_KeyFormIsWhatIsSent(t *testing.T) {
	t.Parallel()
	for form, quoted := range map[string]bool{"": false, KeyFormBare: false, KeyFormQuoted: true} {
		rec := &keyFormRecorder{}
		srv := httptest.NewServer(rec)
		t.Cleanup(srv.Close)
		_, err := RunConformance(t.Context(), srv.URL, ConformanceOptions{KeyForm: form, ListEndpoint: NoListEndpoint, Bursts: 1, Concurrency: 2})
		require.NoError(t, err)
		rec.mu.Lock()
		first := rec.values[0]
		rec.mu.Unlock()
		require.Len(t, first, 1, "form %q", form)
		bare := strings.Trim(first[0], `"`)
		assert.Len(t, bare, 36, "form %q: a UUID", form)
		assert.Equal(t, quoted, strings.HasPrefix(first[0], `"`) && strings.HasSuffix(first[0], `"`), "form %q sent %q", form, first[0])
	}
}

func TestRunConformance_KeyFormRefused(t *testing.T) {
	t.Parallel()
	_, err := RunConformance(t.Context(), "http://127.0.0.1:1", ConformanceOptions{KeyForm: "curly"})
	require.ErrorContains(t, err, `key form "curly" unknown`)
	// Square's key is a body member: it has no quoted form.
	_, err = RunConformance(t.Context(), "http://127.0.0.1:1", ConformanceOptions{KeyForm: KeyFormQuoted, Dialect: "square"})
	require.ErrorContains(t, err, "body member")
}
