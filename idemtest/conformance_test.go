package idemtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failedIDs returns the IDs of the checks that ran and failed.
func failedIDs(results []CheckResult) []string {
	var ids []string
	for _, r := range results {
		if r.Failed() {
			ids = append(ids, r.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// advisedIDs returns the IDs of the advice checks whose advice was not
// followed.
func advisedIDs(results []CheckResult) []string {
	var ids []string
	for _, r := range results {
		if r.Advised() {
			ids = append(ids, r.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// allIDs is every check ID the draft profile reports, in report order.
func allIDs() []string {
	return []string{CheckFirstRequest, CheckReplay, CheckKeyReuse,
		CheckQuotedKey, CheckConcurrent, CheckInProgress, CheckPrincipalScope, CheckProblemDetails}
}

// idemIDs is every check ID the idem profile reports, in report order:
// the draft's, this project's key and stored-error rules among them, and
// its vocabulary after.
func idemIDs() []string {
	return []string{CheckFirstRequest, CheckValidKeys, CheckReplay, CheckKeyReuse, CheckMissingKey, CheckInvalidKey,
		CheckQuotedKey, CheckConcurrent, CheckInProgress, CheckPrincipalScope, CheckErrorNotStored, CheckProblemDetails,
		CheckReplayHeader, CheckProblemTypes, CheckRetryAfter, CheckRequestTarget}
}

func resultIDs(results []CheckResult) []string {
	ids := make([]string, len(results))
	for i, r := range results {
		ids[i] = r.ID
	}
	return ids
}

func TestRunConformance_BrokenServersFailExactlyTheirChecks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		flaw flaw
		// hold gives the checker the server's slow-down hook.
		hold bool
		// idem grades this project's profile too.
		idem bool
		want []string
		// advised are the advice checks not followed: reported, not failed.
		advised []string
	}{
		{name: "correct server", flaw: flawNone, hold: true, want: nil},
		// Keys of any shape and no key at all are the server's business in
		// the draft: graded in the idem profile only.
		{name: "no idempotency", flaw: flawNoIdempotency,
			want: []string{CheckConcurrent, CheckKeyReuse, CheckReplay}},
		{name: "no idempotency, idem profile", flaw: flawNoIdempotency, idem: true,
			want: []string{CheckConcurrent, CheckInvalidKey, CheckKeyReuse, CheckMissingKey, CheckReplay, CheckRequestTarget}},
		{name: "check then insert", flaw: flawCheckThenInsert, want: []string{CheckConcurrent}},
		{name: "no fingerprint", flaw: flawNoFingerprint, want: []string{CheckKeyReuse}},
		// draft-07 §5 recommends scoping without MUST or SHOULD: advice,
		// graded by the idem profile.
		{name: "keys not scoped by principal", flaw: flawGlobalKeys, advised: []string{CheckPrincipalScope}},
		{name: "keys not scoped by principal, idem profile", flaw: flawGlobalKeys, idem: true, want: []string{CheckPrincipalScope}},
		{name: "quotes kept in the key", flaw: flawRawQuotedKey, want: []string{CheckQuotedKey}},
		{name: "409 without Retry-After", flaw: flawNoRetryAfter, hold: true, want: nil},
		{name: "409 without Retry-After, idem profile", flaw: flawNoRetryAfter, hold: true, idem: true, want: []string{CheckRetryAfter}},
		// Its 409s are no problem documents either: held, so one is always seen.
		{name: "problems without problem+json", flaw: flawSloppyProblems, hold: true, advised: []string{CheckProblemDetails}},
		{name: "problems without problem+json, idem profile", flaw: flawSloppyProblems, hold: true, idem: true,
			want: []string{CheckProblemDetails, CheckRetryAfter}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			broken := newBrokenServer(tt.flaw)
			srv := httptest.NewServer(broken)
			t.Cleanup(srv.Close)
			opts := ConformanceOptions{}
			if tt.hold {
				opts.Hold = broken.hold
			}
			want := allIDs()
			if tt.idem {
				opts.Profile = ProfileIdem
				want = idemIDs()
			}

			results, err := RunConformance(t.Context(), srv.URL, opts)
			require.NoError(t, err)

			require.Equal(t, want, resultIDs(results))
			assert.Equal(t, tt.want, failedIDs(results), "results: %+v", results)
			assert.Equal(t, tt.advised, advisedIDs(results), "results: %+v", results)
			for _, r := range results {
				assert.NotEmpty(t, r.Detail, r.ID)
				assert.NotEmpty(t, r.Ref, r.ID)
				assert.NotEmpty(t, r.Quote, r.ID)
			}
		})
	}
}

func TestRunConformance_NoIdempotencySkipsWhatItCannotJudge(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newBrokenServer(flawNoIdempotency))
	t.Cleanup(srv.Close)

	results, err := RunConformance(t.Context(), srv.URL, ConformanceOptions{})
	require.NoError(t, err)

	var skipped []string
	for _, r := range results {
		if r.Skipped {
			assert.False(t, r.Passed, r.ID)
			skipped = append(skipped, r.ID)
		}
	}
	slices.Sort(skipped)
	assert.Equal(t, []string{CheckInProgress, CheckProblemDetails, CheckQuotedKey}, skipped)
}

func TestRunConformance_CheckThenInsertReportsEveryEffect(t *testing.T) {
	t.Parallel()
	broken := newBrokenServer(flawCheckThenInsert)
	srv := httptest.NewServer(broken)
	t.Cleanup(srv.Close)

	results, err := RunConformance(t.Context(), srv.URL, ConformanceOptions{Concurrency: 8})
	require.NoError(t, err)

	concurrent := results[slices.IndexFunc(results, func(r CheckResult) bool { return r.ID == CheckConcurrent })]
	require.True(t, concurrent.Failed())
	assert.Contains(t, concurrent.Detail, "made more than one effect")
}

func TestRunConformance_UnreachableServer(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	results, err := RunConformance(t.Context(), "http://"+addr, ConformanceOptions{})
	require.ErrorIs(t, err, ErrUnreachable)
	assert.Nil(t, results)
	assert.Contains(t, err.Error(), addr)
}

func TestRunConformance_RejectsBadOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, url string
		opts      ConformanceOptions
	}{
		{"relative URL", "/v1", ConformanceOptions{}},
		{"not http", "ftp://example.com", ConformanceOptions{}},
		{"unparsable", "http://[::1", ConformanceOptions{}},
		{"endpoint without slash", "http://127.0.0.1:1", ConformanceOptions{Endpoint: "v1/payments"}},
		{"negative concurrency", "http://127.0.0.1:1", ConformanceOptions{Concurrency: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := RunConformance(t.Context(), tt.url, tt.opts)
			require.Error(t, err)
			assert.NotErrorIs(t, err, ErrUnreachable)
		})
	}
}

func TestRunConformance_FirstRequestRefused(t *testing.T) {
	t.Parallel()
	// A server that refuses every request: the run still reports every
	// check, and the ones that build on a created resource are skipped.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)

	results, err := RunConformance(t.Context(), srv.URL, ConformanceOptions{})
	require.NoError(t, err)
	require.Equal(t, allIDs(), resultIDs(results))
	assert.True(t, results[0].Failed())
	assert.Contains(t, results[0].Detail, "401")
	for _, r := range results {
		switch r.ID {
		case CheckReplay, CheckKeyReuse, CheckQuotedKey, CheckConcurrent, CheckInProgress, CheckPrincipalScope:
			assert.True(t, r.Skipped, r.ID)
		}
	}
}

func TestRunConformance_CustomEndpointBodyAndPrincipals(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		seen []http.Header
	)
	broken := newBrokenServer(flawNone)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/orders", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		r.URL.Path = "/v1/payments"
		broken.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	results, err := RunConformance(t.Context(), srv.URL+"/", ConformanceOptions{
		Endpoint:        "/api/orders",
		Body:            func(i int) []byte { return fmt.Appendf(nil, `{"order":%d}`, i) },
		ContentType:     "application/vnd.orders+json",
		Header:          http.Header{"Authorization": {"Bearer alice"}, "X-Tenant": {"t1"}},
		SecondPrincipal: http.Header{"Authorization": {"Bearer bob"}},
		Concurrency:     4,
	})
	require.NoError(t, err)
	assert.Empty(t, failedIDs(results))

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen)
	var principals []string
	for _, h := range seen {
		assert.Equal(t, "application/vnd.orders+json", h.Get("Content-Type"))
		assert.Equal(t, "t1", h.Get("X-Tenant"))
		principals = append(principals, h.Get("Authorization"))
	}
	assert.Contains(t, principals, "Bearer alice")
	assert.Contains(t, principals, "Bearer bob")
}

func TestRunConformance_OwnAuthorizationWithoutSecondPrincipalSkipsScoping(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newBrokenServer(flawNone))
	t.Cleanup(srv.Close)

	results, err := RunConformance(t.Context(), srv.URL, ConformanceOptions{
		Header: http.Header{"Authorization": {"Bearer alice"}},
	})
	require.NoError(t, err)
	scope := results[slices.IndexFunc(results, func(r CheckResult) bool { return r.ID == CheckPrincipalScope })]
	assert.True(t, scope.Skipped)
	assert.Empty(t, failedIDs(results))
}

func TestConformance_ReferenceServer(t *testing.T) {
	t.Parallel()
	srv := NewServer(t)
	Conformance(t, srv.URL, srv.ConformanceOptions())
}

func TestRunConformance_ReferenceServerPassesEveryCheck(t *testing.T) {
	t.Parallel()
	srv := NewServer(t)

	results, err := RunConformance(t.Context(), srv.URL, srv.ConformanceOptions())
	require.NoError(t, err)
	require.Equal(t, allIDs(), resultIDs(results))
	for _, r := range results {
		assert.True(t, r.Passed, "%s: skipped=%v %s", r.ID, r.Skipped, r.Detail)
	}
}

func TestRunConformance_SlowHeaderProvokesInProgress(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newBrokenServer(flawNoRetryAfter))
	t.Cleanup(srv.Close)

	results, err := RunConformance(t.Context(), srv.URL, ConformanceOptions{
		SlowHeader: http.Header{slowHeaderName: {"1"}},
		Profile:    ProfileIdem,
	})
	require.NoError(t, err)
	assert.Equal(t, []string{CheckRetryAfter}, failedIDs(results), "results: %+v", results)
	retryAfter := results[slices.IndexFunc(results, func(r CheckResult) bool { return r.ID == CheckRetryAfter })]
	assert.Contains(t, retryAfter.Detail, "Retry-After")
}

// A Hold hook that fails leaves the in-progress check unprovoked: a skip
// that says why, never a failure of the server. The concurrency bursts
// still run unheld, and a duplicate of them may meet its original by
// chance and be refused: then the check passes on that 409, which it saw.
func TestRunConformance_HoldErrorSkipsInProgress(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newBrokenServer(flawNone))
	t.Cleanup(srv.Close)

	var asked atomic.Int64
	results, err := RunConformance(t.Context(), srv.URL, ConformanceOptions{
		Hold: func(context.Context) (func(), error) {
			asked.Add(1)
			return nil, errors.New("admin endpoint refused")
		},
	})
	require.NoError(t, err)
	assert.Positive(t, asked.Load(), "the hook was asked")
	assert.Empty(t, failedIDs(results))
	inProgress := results[slices.IndexFunc(results, func(r CheckResult) bool { return r.ID == CheckInProgress })]
	if inProgress.Skipped {
		assert.Contains(t, inProgress.Detail, "admin endpoint refused")
	} else {
		assert.Contains(t, inProgress.Detail, "refused while the original executed (409", "a pass names the refusal it saw")
	}
}
