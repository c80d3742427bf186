package idem

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdingTransport answers the first request 503 without reading its
// body, keeping it, and reads every later one; it records what each
// attempt carried.
type holdingTransport struct {
	mu      sync.Mutex
	reqs    []*http.Request
	headers []http.Header
	bodies  []string
}

func (h *holdingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reqs = append(h.reqs, r)
	h.headers = append(h.headers, r.Header)
	status := http.StatusCreated
	if len(h.reqs) == 1 {
		status = http.StatusServiceUnavailable // its body stays unread, as a write loop still sending it would leave it
		h.bodies = append(h.bodies, "")
	} else {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		h.bodies = append(h.bodies, string(b))
	}
	return &http.Response{
		StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{}`)), ContentLength: 2, Request: r,
	}, nil
}

// A retry sends a request of its own: another header map and another
// body reader, so an earlier attempt the transport still holds is never
// changed by it; both carry the whole body, its length and the key.
func TestEveryRetryIsAFreshRequest(t *testing.T) {
	t.Parallel()
	rt := &holdingTransport{}
	c := newTestClient(t, WithHTTPClient(&http.Client{Transport: rt}))
	req := paymentRequest(t, "http://127.0.0.1:1", 5, "fresh")
	in := begin(t, c, "", req)
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Len(t, rt.reqs, 2)

	first, second := rt.reqs[0], rt.reqs[1]
	assert.NotSame(t, first, second)
	assert.False(t, sameMap(rt.headers[0], rt.headers[1]), "each attempt has its own header map")
	want := `{"amount": 5, "currency": "EUR", "reference": "fresh"}`
	assert.Equal(t, want, rt.bodies[1])
	held, err := io.ReadAll(first.Body)
	require.NoError(t, err)
	assert.Equal(t, want, string(held), "the held attempt's body was not consumed by the retry")
	for _, r := range rt.reqs {
		assert.EqualValues(t, len(want), r.ContentLength)
		assert.Equal(t, in.Key, r.Header.Get("Idempotency-Key"))
		assert.Equal(t, "Bearer "+testToken, r.Header.Get("Authorization"))
		assert.Nil(t, r.GetBody, "the Transport cannot resend by itself")
	}
}

// An attempt without a body sends none, with no length, on every attempt.
func TestAttemptsWithoutABodySendNone(t *testing.T) {
	t.Parallel()
	rt := &holdingTransport{}
	c := newTestClient(t, WithHTTPClient(&http.Client{Transport: rt}))
	req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/v1/ping", nil)
	require.NoError(t, err)
	in := begin(t, c, "", req)
	_, err = c.Do(context.Background(), in)
	require.NoError(t, err)
	require.Len(t, rt.reqs, 2)
	assert.Equal(t, []string{"", ""}, rt.bodies)
	for _, r := range rt.reqs {
		assert.Zero(t, r.ContentLength)
	}
}

// The wait between attempts ends with the context, and a wait of zero
// still reports a context that has ended.
func TestSleepEndsWithTheContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	assert.True(t, sleep(ctx, 0))
	assert.True(t, sleep(ctx, time.Millisecond))
	cancel()
	assert.False(t, sleep(ctx, 0))
	assert.False(t, sleep(ctx, time.Hour), "returns when ctx ends, not after the hour")
}

// A transport error the policy does not retry ends the call with that
// error, and with no answer when no attempt had one.
func TestAStopOnATransportErrorKeepsItsError(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, WithMaxAttempts(1))
	in := begin(t, c, "", paymentRequest(t, "http://127.0.0.1:1", 1, "refused"))
	resp, err := c.Do(context.Background(), in)
	var ge *GiveUpError
	require.ErrorAs(t, err, &ge)
	assert.Nil(t, resp)
	assert.Error(t, ge.LastErr)
	assert.Equal(t, 1, ge.Attempts)
	assert.Equal(t, Pending, in.State)
}
