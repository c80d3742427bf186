package testserver

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A few wrong tokens a second per address are answered 401; past that the
// address gets 429 with Retry-After, even for the right token, until the
// bucket refills.
func TestAdminRateLimitsTokenGuesses(t *testing.T) {
	t.Parallel()
	_, ts := startServer(t, WithAdminToken(testAdminToken))
	wrong := call{method: http.MethodGet, path: adminFaultsPath, token: "guess"}
	for i := range adminFailBurst {
		r := do(t, ts.Client(), ts.URL, wrong)
		require.Equal(t, http.StatusUnauthorized, r.status, "guess %d", i)
	}
	for _, c := range []call{wrong, admin(http.MethodGet, "")} {
		r := do(t, ts.Client(), ts.URL, c)
		assert.Equal(t, http.StatusTooManyRequests, r.status)
		assert.Equal(t, ProblemTooManyRequests, r.problemType())
		assert.Equal(t, "application/problem+json", r.header.Get("Content-Type"))
		secs, err := strconv.Atoi(r.header.Get("Retry-After"))
		require.NoError(t, err, "Retry-After %q", r.header.Get("Retry-After"))
		assert.GreaterOrEqual(t, secs, 1)
	}
	// One failure comes back every 1/adminFailRate s.
	time.Sleep(time.Second/adminFailRate + 50*time.Millisecond)
	decodeFaults(t, do(t, ts.Client(), ts.URL, admin(http.MethodGet, "")))
}

// The limiter's table stays bounded whatever the number of addresses.
func TestFailLimiterBoundsItsTable(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	l := newFailLimiter(func() time.Time { return now })
	for i := range 3 * adminFailHosts {
		l.fail(strconv.Itoa(i))
	}
	assert.LessOrEqual(t, len(l.buckets), adminFailHosts)
}

// WithSeparateAdmin serves /admin/faults only from AdminHandler.
func TestSeparateAdmin(t *testing.T) {
	t.Parallel()
	s, public := startServer(t, WithAdminToken(testAdminToken), WithSeparateAdmin())
	r := do(t, public.Client(), public.URL, admin(http.MethodGet, ""))
	assert.Equal(t, http.StatusNotFound, r.status, "the public handler has no admin route")

	require.NotNil(t, s.AdminHandler())
	adminTS := httptest.NewServer(s.AdminHandler())
	t.Cleanup(adminTS.Close)
	decodeFaults(t, do(t, adminTS.Client(), adminTS.URL, admin(http.MethodPost, `{"lose_next":1}`)))
	assert.Equal(t, 1, s.Faults().Snapshot().LoseNext)
	r = do(t, adminTS.Client(), adminTS.URL, pay("tok", "k1"))
	assert.Equal(t, http.StatusNotFound, r.status, "the admin handler serves no payments")

	plain, _ := startServer(t)
	assert.Nil(t, plain.AdminHandler(), "no token, no admin handler")
}
