package idemtest

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyRecorder passes every request on to the reference server and records
// the (principal, key) pairs it carried.
type keyRecorder struct {
	mu   sync.Mutex
	seen map[[2]string]bool
	next http.Handler
}

func (k *keyRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k.mu.Lock()
	for _, key := range r.Header.Values("Idempotency-Key") {
		k.seen[[2]string{r.Header.Get("Authorization"), key}] = true
	}
	k.mu.Unlock()
	k.next.ServeHTTP(w, r)
}

// take returns the pairs recorded since the last call.
func (k *keyRecorder) take() map[[2]string]bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := k.seen
	k.seen = map[[2]string]bool{}
	return out
}

func newKeyRecorder(t *testing.T, srv *Server) (*keyRecorder, string) {
	t.Helper()
	target, err := url.Parse(srv.URL)
	require.NoError(t, err)
	rec := &keyRecorder{seen: map[[2]string]bool{}, next: httputil.NewSingleHostReverseProxy(target)}
	front := httptest.NewServer(rec)
	t.Cleanup(front.Close)
	return rec, front.URL
}

// TestRunConformance_KeysUniquePerRun: no (principal, key) pair a run
// sends was sent by an earlier run against the same server, so no verdict
// depends on what ran before (a one-character key has 32 values: under a
// fixed principal, 20 runs all but surely meet one twice).
func TestRunConformance_KeysUniquePerRun(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"idem", "stripe"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := NewServer(t, WithDialect(name))
			rec, front := newKeyRecorder(t, srv)
			opts := srv.ConformanceOptions()
			opts.Dialect = name
			opts.Bursts = 1
			earlier := map[[2]string]bool{}
			var first []string
			for run := range 20 {
				results, err := RunConformance(t.Context(), front, opts)
				require.NoError(t, err)
				for pair := range rec.take() {
					require.False(t, earlier[pair], "run %d sent key %q as %q, as an earlier run did", run, pair[1], pair[0])
					earlier[pair] = true
				}
				verdicts := resultWords(results)
				if run == 0 {
					first = verdicts
				}
				assert.Equal(t, first, verdicts, "run %d: %+v", run, results)
			}
		})
	}
}

// TestRunConformance_GivenPrincipalNoOneCharacterKey: under principals the
// caller gives, an earlier run may have used any one-character key, so the
// valid-keys check (idem profile) sends none and says why.
func TestRunConformance_GivenPrincipalNoOneCharacterKey(t *testing.T) {
	t.Parallel()
	srv := NewServer(t)
	rec, front := newKeyRecorder(t, srv)
	opts := srv.ConformanceOptions()
	opts.Bursts = 1
	opts.Profile = ProfileIdem
	opts.Header = http.Header{"Authorization": {"Bearer given-a"}}
	opts.SecondPrincipal = http.Header{"Authorization": {"Bearer given-b"}}
	earlier := map[[2]string]bool{}
	for run := range 5 {
		results, err := RunConformance(t.Context(), front, opts)
		require.NoError(t, err)
		assert.Empty(t, failedIDs(results), "run %d: %+v", run, results)
		for pair := range rec.take() {
			assert.NotEqual(t, 1, len(pair[1]), "run %d sent a one-character key", run)
			if pair[1] != "" { // the empty key is a malformed key, sent to be refused
				require.False(t, earlier[pair], "run %d sent key %q as an earlier run did", run, pair[1])
			}
			earlier[pair] = true
		}
		valid := results[1]
		require.Equal(t, CheckValidKeys, valid.ID)
		assert.Contains(t, valid.Detail, "no 1-character key")
	}
}

// resultWords is each check's ID and verdict, in report order.
func resultWords(results []CheckResult) []string {
	out := make([]string, len(results))
	for i, r := range results {
		word := "pass"
		switch {
		case r.Skipped:
			word = "skip"
		case !r.Passed:
			word = "fail"
		}
		out[i] = r.ID + " " + word
	}
	return out
}

// TestRunConformance_SameVerdictsTwiceUnderAFixedPrincipal: the whole
// check, run twice in a row against one reference server under principals
// the caller fixes (so the second run meets everything the first left),
// gives the same verdict for every check, and fails none: no verdict
// depends on chance or on an earlier run (go test -count=20 -run
// SameVerdictsTwice).
func TestRunConformance_SameVerdictsTwiceUnderAFixedPrincipal(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"idem", "stripe", "paypal", "adyen", "square", "stripe-v2", "checkout"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := NewServer(t, WithDialect(name))
			opts := srv.ConformanceOptions()
			opts.Dialect, opts.Bursts, opts.Concurrency = name, 2, 8
			if name == "idem" {
				opts.Profile = ProfileIdem
			}
			opts.Header = http.Header{"Authorization": {"Bearer fixed-a"}}
			opts.SecondPrincipal = http.Header{"Authorization": {"Bearer fixed-b"}}

			first, err := RunConformance(t.Context(), srv.URL, opts)
			require.NoError(t, err)
			second, err := RunConformance(t.Context(), srv.URL, opts)
			require.NoError(t, err)

			assert.Equal(t, resultWords(first), resultWords(second), "first: %+v\nsecond: %+v", first, second)
			for _, r := range second {
				assert.True(t, r.Passed, "%s %s: skipped=%v %s", r.ID, r.Level, r.Skipped, r.Detail)
			}
		})
	}
}
