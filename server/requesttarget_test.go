package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// refundsAPI is a service written as users write one: an http.ServeMux
// with a path value, guarded by Handler(mux). Every refund is an effect,
// counted per account; the answer names the account and the query's
// amount.
type refundsAPI struct {
	mu      sync.Mutex
	refunds map[string]int
	total   atomic.Int32
}

func (a *refundsAPI) refund(w http.ResponseWriter, r *http.Request) {
	account := r.PathValue("id")
	a.total.Add(1)
	a.mu.Lock()
	a.refunds[account]++
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]string{"account": account, "amount": r.URL.Query().Get("amount")})
}

func newRefundsServer(t *testing.T, store server.Store) (*refundsAPI, *httptest.Server) {
	t.Helper()
	api := &refundsAPI{refunds: make(map[string]int)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /accounts/{id}/refunds", api.refund)
	srv := httptest.NewServer(mustNew(t, store).Handler(mux))
	t.Cleanup(srv.Close)
	return api, srv
}

type refundAnswer struct {
	status  int
	replay  bool
	problem string
	account string
	amount  string
}

func postRefund(t *testing.T, srv *httptest.Server, target, key string) refundAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+target, strings.NewReader(`{"reason":"duplicate"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(server.KeyHeader, key)
	req.Header.Set("Authorization", "Bearer tenant-1")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	ans := refundAnswer{status: resp.StatusCode, replay: resp.Header.Get(server.ReplayedHeader) == "true"}
	if resp.Header.Get("Content-Type") == "application/problem+json" {
		var p server.Problem
		require.NoError(t, json.Unmarshal(body, &p))
		ans.problem = strings.TrimPrefix(p.Type, server.ProblemTypePrefix)
		return ans
	}
	var got map[string]string
	require.NoError(t, json.Unmarshal(body, &got), "body %s", body)
	ans.account, ans.amount = got["account"], got["amount"]
	return ans
}

// One key sent to two accounts' refunds, concurrently: one refund per key,
// and no account ever gets the other's refund as its answer.
func TestKeyReusedForAnotherAccountIsKeyReuse(t *testing.T) {
	t.Parallel()
	api, srv := newRefundsServer(t, server.NewMemoryStore())
	const keys, perAccount = 16, 4
	var wg sync.WaitGroup
	var mu sync.Mutex
	var answers []refundAnswer
	var targets []string
	for k := range keys {
		key := fmt.Sprintf("refund-key-%d", k)
		for i := range 2 * perAccount {
			account := []string{"acct_A", "acct_B"}[i%2]
			target := "/accounts/" + account + "/refunds"
			wg.Add(1)
			go func() {
				defer wg.Done()
				ans := postRefund(t, srv, target, key)
				mu.Lock()
				answers, targets = append(answers, ans), append(targets, account)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	assert.Equal(t, keys, int(api.total.Load()), "one refund per key")
	reused := 0
	for i, ans := range answers {
		switch {
		case ans.status == http.StatusCreated:
			assert.Equal(t, targets[i], ans.account, "a 201 answers the account of its own request")
		case ans.status == http.StatusUnprocessableEntity:
			assert.Equal(t, "key-reused", ans.problem)
			reused++
		case ans.status == http.StatusConflict:
			assert.Equal(t, "in-progress", ans.problem)
		default:
			t.Errorf("unexpected answer %+v", ans)
		}
	}
	assert.GreaterOrEqual(t, reused, keys*perAccount, "every request to the other account is key reuse")

	// Afterwards, each key's own account replays; the other is refused.
	for k := range keys {
		key := fmt.Sprintf("refund-key-%d", k)
		a, b := postRefund(t, srv, "/accounts/acct_A/refunds", key), postRefund(t, srv, "/accounts/acct_B/refunds", key)
		replays := 0
		for _, ans := range []refundAnswer{a, b} {
			if ans.replay {
				replays++
				continue
			}
			assert.Equal(t, http.StatusUnprocessableEntity, ans.status, "%+v", ans)
		}
		assert.Equal(t, 1, replays, "key %s: exactly one account owns it", key)
	}
}

func TestQueryIsInTheFingerprint(t *testing.T) {
	t.Parallel()
	api, srv := newRefundsServer(t, server.NewMemoryStore())
	first := postRefund(t, srv, "/accounts/acct_A/refunds?amount=5", "k-amount")
	require.Equal(t, http.StatusCreated, first.status)
	other := postRefund(t, srv, "/accounts/acct_A/refunds?amount=5000", "k-amount")
	assert.Equal(t, http.StatusUnprocessableEntity, other.status, "another amount is another request")
	assert.Equal(t, "key-reused", other.problem)
	again := postRefund(t, srv, "/accounts/acct_A/refunds?amount=5", "k-amount")
	assert.True(t, again.replay)
	assert.Equal(t, "5", again.amount)
	assert.Equal(t, 1, int(api.total.Load()))
}

// The query is fingerprinted as sent: parameters in another order, or
// spelled with another escape, are another request (PROTOCOL.md, Choices).
func TestQueryIsFingerprintedAsSent(t *testing.T) {
	t.Parallel()
	_, srv := newRefundsServer(t, server.NewMemoryStore())
	require.Equal(t, http.StatusCreated, postRefund(t, srv, "/accounts/acct_A/refunds?amount=5&currency=EUR", "k-order").status)
	assert.Equal(t, http.StatusUnprocessableEntity, postRefund(t, srv, "/accounts/acct_A/refunds?currency=EUR&amount=5", "k-order").status)
	assert.Equal(t, http.StatusUnprocessableEntity, postRefund(t, srv, "/accounts/acct_A/refunds?amount=%35&currency=EUR", "k-order").status)
	assert.True(t, postRefund(t, srv, "/accounts/acct_A/refunds?amount=5&currency=EUR", "k-order").replay)
}

func TestRequestFingerprintCoversTheTarget(t *testing.T) {
	t.Parallel()
	body := []byte(`{"amount":1000}`)
	base := server.RequestFingerprint(http.MethodPost, "/accounts/{id}/refunds", "/accounts/A/refunds", "", body)
	assert.True(t, strings.HasPrefix(base, server.RequestFingerprintPrefix))
	distinct := map[string]string{
		"base":            base,
		"other path":      server.RequestFingerprint(http.MethodPost, "/accounts/{id}/refunds", "/accounts/B/refunds", "", body),
		"escaped slash":   server.RequestFingerprint(http.MethodPost, "/a/{id}", "/a/b%2Fc", "", body),
		"plain slash":     server.RequestFingerprint(http.MethodPost, "/a/{id}", "/a/b/c", "", body),
		"query":           server.RequestFingerprint(http.MethodPost, "/accounts/{id}/refunds", "/accounts/A/refunds", "x=1", body),
		"path into query": server.RequestFingerprint(http.MethodPost, "/accounts/{id}/refunds", "/accounts/A/refunds?x=1", "", body),
		"v1":              server.Fingerprint(http.MethodPost, "/accounts/{id}/refunds", body),
	}
	seen := make(map[string]string)
	for name, sum := range distinct {
		if other, dup := seen[sum]; dup {
			t.Errorf("%s and %s share a fingerprint", name, other)
		}
		seen[sum] = name
	}
	assert.Equal(t, base, server.RequestFingerprint(http.MethodPost, "/accounts/{id}/refunds", "/accounts/A/refunds", "", []byte(` { "amount" : 1000 } `)),
		"the body is canonicalised as before")
}
