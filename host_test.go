package idem

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hostRecorder records the Host header of every request it serves.
type hostRecorder struct {
	mu    sync.Mutex
	hosts map[string][]string // by method
}

func (h *hostRecorder) record(r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hosts == nil {
		h.hosts = map[string][]string{}
	}
	h.hosts[r.Method] = append(h.hosts[r.Method], r.Host)
}

func (h *hostRecorder) of(method string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.hosts[method]...)
}

const virtualHost = "payments.internal.example"

// virtualHostRequest is a payment to baseURL addressed to virtualHost.
func virtualHostRequest(t *testing.T, baseURL string) *http.Request {
	req := paymentRequest(t, baseURL, 700, "vhost")
	req.Host = virtualHost
	return req
}

// A Host override given to Begin is part of the intent: after a restart,
// the resumed intent is sent to the same virtual host.
func TestHostOverrideSurvivesARestart(t *testing.T) {
	t.Parallel()
	var seen hostRecorder
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.record(r)
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "intents.db")
	ctx := context.Background()

	first, err := New(append(fastOptions(), WithBoltStore(path, nil))...)
	require.NoError(t, err)
	in := begin(t, first, "vhost-payment", virtualHostRequest(t, srv.URL))
	assert.Equal(t, virtualHost, in.Host)
	require.NoError(t, first.Close(), "the process stops before sending")

	second := newTestClient(t, WithBoltStore(path, nil), WithRequestEditor(bearer(testToken)))
	resumed, err := second.Resume(ctx, in.Key)
	require.NoError(t, err)
	assert.Equal(t, virtualHost, resumed.Host)
	resp, err := second.Do(ctx, resumed)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, virtualHost, resp.Request.Host)
	assert.Equal(t, []string{virtualHost}, seen.of(http.MethodPost))

	again, err := second.Do(ctx, resumed)
	require.NoError(t, err)
	assert.Equal(t, virtualHost, again.Request.Host, "a local replay names the request it answers")
}

// Polls of an operation on the intent's origin go to the same virtual
// host; an operation elsewhere gets its own URL's host.
func TestHostOverrideOnPolls(t *testing.T) {
	t.Parallel()
	var elsewhere hostRecorder
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.record(r)
		_, _ = w.Write([]byte(`{"status":"succeeded"}`))
	}))
	t.Cleanup(other.Close)
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	otherHost := strings.TrimPrefix(otherURL, "http://")

	cases := map[string]struct {
		location string
		polled   *hostRecorder
		wantHost string
	}{
		"same origin":  {location: "/v1/operations/op_1", polled: &hostRecorder{}, wantHost: virtualHost},
		"other origin": {location: otherURL + "/v1/operations/op_1", polled: &elsewhere, wantHost: otherHost},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var posted hostRecorder
			srv := acceptingServer(t, func(string) string { return tc.location }, func(w http.ResponseWriter, r *http.Request) {
				tc.polled.record(r)
				_, _ = w.Write([]byte(`{"status":"succeeded"}`))
			})
			c := newTestClient(t, append(quickPolling(newTestClock()), WithRequestEditor(func(_ context.Context, r *http.Request) error {
				if r.Method == http.MethodPost {
					posted.record(r)
				}
				return nil
			}))...)
			in := begin(t, c, "", virtualHostRequest(t, srv.URL))
			_, err := c.Do(context.Background(), in)
			require.NoError(t, err)
			require.Equal(t, Succeeded, in.State)
			assert.Equal(t, []string{virtualHost}, posted.of(http.MethodPost))
			assert.Equal(t, []string{tc.wantHost}, tc.polled.of(http.MethodGet))
		})
	}
}

func TestBeginHost(t *testing.T) {
	t.Parallel()
	c := newTestClient(t)
	ctx := context.Background()

	plain := begin(t, c, "", paymentRequest(t, "http://127.0.0.1:9", 1, "plain"))
	assert.Empty(t, plain.Host, "the URL's own host is not an override")

	in := begin(t, c, "named", virtualHostRequest(t, "http://127.0.0.1:9"))
	again, err := c.Begin(ctx, "named", virtualHostRequest(t, "http://127.0.0.1:9"))
	require.NoError(t, err)
	assert.Equal(t, in.Key, again.Key)

	elsewhere := virtualHostRequest(t, "http://127.0.0.1:9")
	elsewhere.Host = "refunds.internal.example"
	_, err = c.Begin(ctx, "named", elsewhere)
	assert.ErrorIs(t, err, ErrIntentConflict, "another host is another intent")

	for _, bad := range []string{"bad host", "evil\r\nX-Injected: 1", "host/path", "h\x00"} {
		req := paymentRequest(t, "http://127.0.0.1:9", 1, "bad")
		req.Host = bad
		_, err := c.Begin(ctx, "", req)
		assert.ErrorIs(t, err, ErrInvalidRequest, "%q", bad)
	}
	for _, good := range []string{"example.com:8443", "[::1]:443", "xn--bcher-kva.example"} {
		req := paymentRequest(t, "http://127.0.0.1:9", 1, "good")
		req.Host = good
		_, err := c.Begin(ctx, "", req)
		assert.NoError(t, err, "%q", good)
	}
}
