package idem

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The first attempt sends the header Begin built, which the caller gets
// back in resp.Request. A caller changing it after a give-up changes
// nothing the next Do sends: the credentials are the ones Begin was
// given, and nothing the caller added goes out.
func TestAGiveUpKeepsCredentialsTheCallerCannotReach(t *testing.T) {
	t.Parallel()
	var got seen
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.record(r)
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"pay_1"}`))
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, WithMaxAttempts(1), WithSecretHeaders("X-Api-Key"))
	req := paymentRequest(t, srv.URL, 1, "give-up")
	req.Header.Set("X-Api-Key", "sekrit")
	in := begin(t, c, "", req)

	resp, err := c.Do(context.Background(), in)
	require.Error(t, err)
	require.NotNil(t, resp)
	h := resp.Request.Header
	h["Authorization"][0] = "Bearer stolen" // in place
	h.Del("X-Api-Key")
	h.Set("X-Added", "1")
	h.Set("Content-Type", "text/evil")

	resp, err = c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	reqs := got.all()
	require.Len(t, reqs, 2)
	for i, r := range reqs {
		assert.Equal(t, "Bearer "+testToken, r.header.Get("Authorization"), "attempt %d", i)
		assert.Equal(t, "sekrit", r.header.Get("X-Api-Key"), "attempt %d", i)
		assert.Equal(t, "application/json", r.header.Get("Content-Type"), "attempt %d", i)
		assert.Empty(t, r.header.Get("X-Added"), "attempt %d", i)
		assert.Equal(t, in.Key, r.header.Get("Idempotency-Key"), "attempt %d", i)
	}
}

// Changing resp.Request's header after a Do changes nothing stored.
func TestChangingTheSentHeaderNeverChangesTheRecord(t *testing.T) {
	t.Parallel()
	srv, _ := recordingServer(t)
	c := newTestClient(t)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "sent-header"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	resp.Request.Header["Content-Type"][0] = "text/evil"
	resp.Request.Header.Set("X-Added", "1")
	rec, err := c.store.Get(context.Background(), in.Key)
	require.NoError(t, err)
	assert.Equal(t, http.Header{"Content-Type": {"application/json"}}, rec.Header)
	assert.Empty(t, rec.SecretHeaders[1:], "one secret header: Authorization")
}

// Polling the operation of the same origin sends the secret headers and
// nothing else of the request Begin was given.
func TestPollingSendsTheSecretsAlone(t *testing.T) {
	t.Parallel()
	var polls seen
	srv := acceptingServer(t, func(string) string { return "/v1/operations/op_1" }, func(w http.ResponseWriter, r *http.Request) {
		polls.record(r)
		_, _ = w.Write([]byte(`{"status":"succeeded"}`))
	})
	c := newTestClient(t, WithPolling(10*time.Millisecond, 5*time.Second), WithSecretHeaders("X-Api-Key"))
	req := paymentRequest(t, srv.URL, 1, "poll-secrets")
	req.Header.Set("X-Api-Key", "sekrit")
	req.Header.Set("X-Trace-Tag", "not a secret")
	in := begin(t, c, "", req)
	_, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	reqs := polls.all()
	require.NotEmpty(t, reqs)
	for _, r := range reqs {
		assert.Equal(t, "Bearer "+testToken, r.header.Get("Authorization"))
		assert.Equal(t, "sekrit", r.header.Get("X-Api-Key"))
		assert.Empty(t, r.header.Get("Content-Type"))
		assert.Empty(t, r.header.Get("X-Trace-Tag"))
		assert.Empty(t, r.header.Get("Idempotency-Key"))
	}
}

// One Client shared by many goroutines, each call with one of several
// tenants' credentials: every request carries its own, the header Begin
// built for it never crossing to another call.
func TestConcurrentCallsEachSendTheirOwnCredentials(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(r.Header.Get("Authorization") + "|" + r.Header.Get("X-Call")))
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t)
	tokens := []string{"Bearer tenant-a", "Bearer tenant-b", "Bearer tenant-c"}
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				tok, call := tokens[(g+i)%len(tokens)], fmt.Sprintf("%d-%d", g, i)
				req := paymentRequest(t, srv.URL, 1, call)
				req.Header.Set("Authorization", tok)
				req.Header.Set("X-Call", call)
				in, err := c.Begin(context.Background(), "", req)
				if err != nil {
					errs <- err
					return
				}
				resp, err := c.Do(context.Background(), in)
				if err != nil {
					errs <- err
					return
				}
				body, _ := io.ReadAll(resp.Body)
				if got, want := string(body), tok+"|"+call; got != want {
					errs <- fmt.Errorf("call %s sent %q, want %q", call, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
