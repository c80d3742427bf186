package idem

import (
	"context"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// notProofAnswers are answers that prove nothing about an earlier attempt
// whose answer was lost: expired credentials, a plain 409, a redirect,
// the 5xx a CDN or an odd gateway sends.
var notProofAnswers = []struct {
	name   string
	status int
	header map[string]string
	body   string
}{
	{"401 expired credentials", 401, map[string]string{"WWW-Authenticate": "Bearer"}, `{"error":"token expired"}`},
	{"403", 403, nil, `forbidden`},
	{"407 proxy", 407, map[string]string{"Proxy-Authenticate": "Basic"}, ``},
	{"409 plain JSON", 409, map[string]string{"Content-Type": "application/json"}, `{"error":{"type":"idempotency_error","code":"idempotency_key_in_use"}}`},
	{"409 about:blank", 409, map[string]string{"Content-Type": "application/problem+json", "Retry-After": "0"}, `{"type":"about:blank","title":"Conflict","status":409}`},
	{"302", 302, map[string]string{"Location": "/login"}, ``},
	{"400 validation", 400, map[string]string{"Content-Type": "application/json"}, `{"error":"amount too large"}`},
	{"507", 507, nil, ``},
	{"520 CDN", 520, nil, `origin error`},
	{"522 CDN", 522, nil, `connection timed out`},
	{"524 CDN", 524, nil, `a timeout occurred`},
	{"598", 598, nil, ``},
}

// After an attempt whose answer was lost (the origin charged, then the
// connection dropped), an answer that proves nothing never makes the
// intent Failed: it stays Pending, resumable with its key, and the error
// matches ErrOutcomeUnknown, on every Do, until an answer that proves the
// outcome arrives. Then the server's replay settles it: one payment.
func TestAnswersThatProveNothingLeaveALostAnswerUnsettled(t *testing.T) {
	t.Parallel()
	for _, tc := range notProofAnswers {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			origin := idemtest.NewServer(t)
			origin.LoseNextResponses(1)
			var healed atomic.Bool
			f := newFront(t, origin.URL, func(n int, w http.ResponseWriter, _ *http.Request, _ http.Handler) bool {
				if n == 1 || healed.Load() {
					return false
				}
				answer(w, tc.status, tc.header, tc.body)
				return true
			})
			c := newTestClient(t, WithMaxAttempts(3))
			in := begin(t, c, "order-1/payment", paymentRequest(t, f.URL, 1000, "order-1"))

			for range 2 {
				resp, err := c.Do(context.Background(), in)
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrOutcomeUnknown)
				assert.NotErrorIs(t, err, ErrFinalFailure)
				assert.Equal(t, Pending, in.State)
				assert.True(t, in.MayHaveExecuted)
				assert.False(t, IsLocalReplay(resp), "never a stored failure replayed")
			}
			require.Equal(t, 1, origin.PaymentCount(), "the first attempt charged")

			healed.Store(true)
			resp, err := c.Do(context.Background(), in)
			require.NoError(t, err)
			assert.Equal(t, http.StatusCreated, resp.StatusCode)
			assert.True(t, IsReplay(resp), "the server replays the charge")
			assert.Equal(t, Succeeded, in.State)
			assert.Equal(t, 1, origin.PaymentCount())
		})
	}
}

// The doubt survives a restart: a new process on the same bbolt file
// treats a 401 as proving nothing.
func TestAmbiguityIsStickyAcrossRestarts(t *testing.T) {
	t.Parallel()
	origin := idemtest.NewServer(t)
	origin.LoseNextResponses(1)
	var healed atomic.Bool
	f := newFront(t, origin.URL, func(n int, w http.ResponseWriter, _ *http.Request, _ http.Handler) bool {
		if n == 1 || healed.Load() {
			return false
		}
		answer(w, http.StatusUnauthorized, nil, "")
		return true
	})
	path := filepath.Join(t.TempDir(), "intents.db")
	c, err := New(append(fastOptions(), WithBoltStore(path, nil), WithMaxAttempts(1))...)
	require.NoError(t, err)
	in := begin(t, c, "order-2/payment", paymentRequest(t, f.URL, 1000, "order-2"))
	_, err = c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	require.NoError(t, c.Close())

	c2, err := New(append(fastOptions(), WithBoltStore(path, nil), WithMaxAttempts(1),
		WithRequestEditor(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+testToken)
			return nil
		}))...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c2.Close() })
	pending, err := c2.Pending(context.Background())
	require.NoError(t, err)
	require.Len(t, pending, 1)
	assert.True(t, pending[0].MayHaveExecuted, "the doubt is on disk")
	_, err = c2.Do(context.Background(), pending[0])
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.Equal(t, Pending, pending[0].State)

	healed.Store(true)
	resp, err := c2.Do(context.Background(), pending[0])
	require.NoError(t, err)
	assert.True(t, IsReplay(resp))
	assert.Equal(t, 1, origin.PaymentCount())
}

// A refusal on the first attempt of an intent this Client began, with
// nothing sent before, is a true failure, as before.
func TestRefusalOfAFreshIntentIsFinal(t *testing.T) {
	t.Parallel()
	f := newFront(t, "http://127.0.0.1:9", func(_ int, w http.ResponseWriter, _ *http.Request, _ http.Handler) bool {
		answer(w, http.StatusUnauthorized, nil, "")
		return true
	})
	c := newTestClient(t)
	in := begin(t, c, "", paymentRequest(t, f.URL, 1000, "fresh"))
	resp, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrFinalFailure)
	assert.NotErrorIs(t, err, ErrOutcomeUnknown)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Equal(t, Failed, in.State)
	assert.EqualValues(t, 1, f.requests.Load())
}

// An intent read back from the keystore by another process may have been
// on the wire when its first process died (it persists every intent
// before sending): a refusal then proves nothing either.
func TestRefusalOfAResumedIntentIsNotFinal(t *testing.T) {
	t.Parallel()
	f := newFront(t, "http://127.0.0.1:9", func(_ int, w http.ResponseWriter, _ *http.Request, _ http.Handler) bool {
		answer(w, http.StatusForbidden, nil, "")
		return true
	})
	store := keystore.NewMemory()
	first, err := New(append(fastOptions(), WithStore(nopCloseStore{store}))...)
	require.NoError(t, err)
	in := begin(t, first, "batch/1", paymentRequest(t, f.URL, 1000, "batch-1"))
	require.NoError(t, first.Close())

	second := newTestClient(t, WithStore(store), WithRequestEditor(bearer(testToken)))
	resumed, err := second.Resume(context.Background(), in.Key)
	require.NoError(t, err)
	_, err = second.Do(context.Background(), resumed)
	require.ErrorIs(t, err, ErrOutcomeUnknown)
	assert.Equal(t, Pending, resumed.State)
}

// nopCloseStore is a store whose Close does nothing, so two Clients can
// share one memory store one after the other, as two processes share a
// file.
type nopCloseStore struct{ keystore.Store }

func (nopCloseStore) Close() error { return nil }
