package idemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordingTB records Fatalf instead of stopping the test, to check what
// the server reports.
type recordingTB struct {
	testing.TB
	mu    sync.Mutex
	fatal []string
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Fatalf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fatal = append(r.fatal, fmt.Sprintf(format, args...))
}

func post(t *testing.T, client *http.Client, url, token, key string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url,
		strings.NewReader(`{"amount":1000,"currency":"EUR"}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

func noKeepAlive() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}

func TestServerCreatesAndCountsPayments(t *testing.T) {
	t.Parallel()
	s := NewServer(t)
	require.True(t, strings.HasPrefix(s.URL, "http://127.0.0.1:"), s.URL)

	for _, token := range []string{"alice", "alice", "bob", ""} {
		resp, err := post(t, s.Client(), s.URL+"/v1/payments", token, "key-"+token)
		require.NoError(t, err)
		assert.Equal(t, http.StatusCreated, resp.StatusCode)
	}
	assert.Equal(t, 3, s.PaymentCount(), "alice's retry is a replay")
	assert.Len(t, s.Payments("alice"), 1)
	assert.Len(t, s.Payments(""), 1)
	assert.Empty(t, s.Payments("anonymous"), "a token called anonymous is not the anonymous principal")
	assert.Empty(t, s.Payments("carol"))
	assert.Equal(t, 4, s.Requests())
}

func TestServerFaults(t *testing.T) {
	t.Parallel()
	s := NewServer(t)
	url := s.URL + "/v1/payments"

	s.FailNext(1, http.StatusTooManyRequests, 3*time.Second)
	resp, err := post(t, s.Client(), url, "", "k")
	require.NoError(t, err)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	assert.Equal(t, "3", resp.Header.Get("Retry-After"))

	s.ResetNext(1)
	_, err = post(t, noKeepAlive(), url, "", "k")
	require.Error(t, err)
	assert.Equal(t, 0, s.PaymentCount())

	s.LoseNextResponses(1)
	_, err = post(t, noKeepAlive(), url, "", "k")
	require.Error(t, err)
	assert.Equal(t, 1, s.PaymentCount())

	resp, err = post(t, s.Client(), url, "", "k")
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))

	s.FailNext(5, http.StatusBadGateway, 0)
	s.ResetNext(5)
	s.LoseNextResponses(5)
	s.SetHandlerDelay(time.Hour)
	s.ClearFaults()
	resp, err = post(t, s.Client(), url, "", "k2")
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, 5, s.Requests())
}

func TestServerRetentionWithFakeClock(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := NewServer(t, WithClock(clock), WithRetention(time.Hour), WithLease(time.Minute), WithPayoutDelay(0))

	_, err := post(t, s.Client(), s.URL+"/v1/payments", "", "k")
	require.NoError(t, err)
	resp, err := post(t, s.Client(), s.URL+"/v1/payments", "", "k")
	require.NoError(t, err)
	assert.Equal(t, "true", resp.Header.Get("Idempotent-Replayed"))

	mu.Lock()
	now = now.Add(time.Hour)
	mu.Unlock()
	resp, err = post(t, s.Client(), s.URL+"/v1/payments", "", "k")
	require.NoError(t, err)
	assert.Empty(t, resp.Header.Get("Idempotent-Replayed"), "past retention the key is new")
	assert.Equal(t, 2, s.PaymentCount())

	resp, err = post(t, s.Client(), s.URL+"/v1/payouts", "", "p")
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	op, err := s.Client().Get(s.URL + resp.Header.Get("Location"))
	require.NoError(t, err)
	defer op.Body.Close()
	var doc struct{ Status string }
	require.NoError(t, json.NewDecoder(op.Body).Decode(&doc))
	assert.Equal(t, "succeeded", doc.Status, "WithPayoutDelay(0) settles at once")
}

func TestServerReportsMisuseToTheTest(t *testing.T) {
	t.Parallel()
	tb := &recordingTB{TB: t}
	assert.Nil(t, NewServer(tb, WithLease(-time.Second)))
	require.Len(t, tb.fatal, 1)
	assert.Contains(t, tb.fatal[0], "lease")

	s := NewServer(tb)
	s.FailNext(1, http.StatusOK, 0)
	require.Len(t, tb.fatal, 2)
	assert.Contains(t, tb.fatal[1], "FailNext status")

	s.Close()
	s.Close()
	_ = s.PaymentCount()
	require.Len(t, tb.fatal, 3, "reading a closed server fails the test")
}

func TestStartPanicsOnMisuseOutsideATest(t *testing.T) {
	t.Parallel()
	s, err := Start()
	require.NoError(t, err)
	defer s.Close()
	assert.Panics(t, func() { s.FailNext(1, 42, 0) })

	_, err = Start(WithRetention(-1))
	assert.Error(t, err)
}
