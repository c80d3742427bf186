package idem

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/idemtest"
)

// A 409 from a server that is not this project's, whatever its body, says
// the original is still executing (draft-07 §2.7): slow effects whose
// first attempt timed out are retried until the server replays them,
// never stored as failures.
func TestSlowEffectsBehindAForeignConflictAllSucceed(t *testing.T) {
	t.Parallel()
	for _, stripeStyle := range []bool{false, true} {
		t.Run(fmt.Sprintf("stripeStyle=%v", stripeStyle), func(t *testing.T) {
			t.Parallel()
			srv := newOtherLibrary(t, 400*time.Millisecond, stripeStyle)
			c := newTestClient(t, WithMaxAttempts(6), WithHTTPClient(&http.Client{Timeout: 150 * time.Millisecond}))
			var wg sync.WaitGroup
			intents := make([]*Intent, 10)
			errs := make([]error, len(intents))
			for i := range intents {
				intents[i] = begin(t, c, fmt.Sprintf("slow/%d", i), paymentRequest(t, srv.URL, 100+i, fmt.Sprintf("slow-%d", i)))
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = c.Do(context.Background(), intents[i])
				}()
			}
			wg.Wait()
			for i, in := range intents {
				require.NoError(t, errs[i], "intent %d", i)
				assert.Equal(t, Succeeded, in.State, "intent %d", i)
			}
			assert.Equal(t, len(intents), srv.paymentCount())
		})
	}
}

// A CDN that times out (524) while the origin charges: the 524 is
// retried with the same key and the origin's replay settles the intent.
func TestCDNTimeoutWhileTheOriginChargesIsRetried(t *testing.T) {
	t.Parallel()
	origin := idemtest.NewServer(t)
	f := newFront(t, origin.URL, func(n int, w http.ResponseWriter, r *http.Request, forward http.Handler) bool {
		if n != 1 {
			return false
		}
		forward.ServeHTTP(httptest.NewRecorder(), r) // the origin charges; its answer is lost
		answer(w, 524, map[string]string{"Content-Type": "text/html"}, "<h1>A timeout occurred</h1>")
		return true
	})
	c := newTestClient(t)
	in := begin(t, c, "", paymentRequest(t, f.URL, 1000, "cdn"))
	resp, err := c.Do(context.Background(), in)
	require.NoError(t, err)
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.True(t, IsReplay(resp))
	assert.Equal(t, Succeeded, in.State)
	assert.True(t, in.MayHaveExecuted)
	assert.Equal(t, 2, in.Attempts)
	assert.Equal(t, 1, origin.PaymentCount())
}

// Key reuse answered 422 about:blank: Draft cannot tell it from a
// validation error and says a final failure, never key reuse; a dialect
// that knows its server says ErrKeyReused.
func TestKeyReuseAnsweredAboutBlank(t *testing.T) {
	t.Parallel()
	knowing := dialect.Draft()
	knowing.Name = "about-blank-422"
	knowing.Classify = func(a dialect.Answer) dialect.Verdict {
		if a.Status == http.StatusUnprocessableEntity && dialect.ProblemType(a) == "about:blank" {
			return dialect.KeyReused
		}
		return dialect.DraftClassify(a)
	}
	for _, tc := range []struct {
		name    string
		opts    []Option
		wantErr error
		notErr  error
	}{
		{"draft", nil, ErrFinalFailure, ErrKeyReused},
		{"dialect that knows", []Option{WithDialect(knowing)}, ErrKeyReused, ErrOutcomeUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newOtherLibrary(t, 0, false)
			sameKey := func() (string, error) { return "0b6f0e3e-5f63-4c38-9d1e-0d0c7a9f2f11", nil }
			c := newTestClient(t, append(tc.opts, WithKeyGenerator(sameKey))...)
			first := begin(t, c, "", paymentRequest(t, srv.URL, 1000, "reuse"))
			_, err := c.Do(context.Background(), first)
			require.NoError(t, err)

			other := paymentRequest(t, srv.URL, 2000, "reuse")
			second, err := New(append(fastOptions(), append(tc.opts, WithKeyGenerator(sameKey))...)...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = second.Close() })
			in := begin(t, second, "", other)
			resp, err := second.Do(context.Background(), in)
			require.ErrorIs(t, err, tc.wantErr)
			assert.NotErrorIs(t, err, tc.notErr)
			assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
			assert.Equal(t, Failed, in.State)
			assert.Equal(t, 1, srv.paymentCount())
		})
	}
}

// An operation document that says the work failed (this project's shape,
// Azure's, Google's) makes the accepted intent Failed, never Succeeded.
func TestFailedOperationDocumentsFailTheIntent(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		`{"id":"op_1","status":"failed"}`,
		`{"id":"op_1","status":"Canceled"}`,
		`{"name":"operations/op_1","done":true,"error":{"code":13,"message":"internal"}}`,
	} {
		t.Run(doc, func(t *testing.T) {
			t.Parallel()
			var posts, gets int
			var mu sync.Mutex
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				defer mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				if r.Method == http.MethodPost {
					posts++
					w.Header().Set("Location", "/v1/operations/op_1")
					w.WriteHeader(http.StatusAccepted)
					_, _ = io.WriteString(w, `{"id":"op_1","status":"pending"}`)
					return
				}
				gets++
				_, _ = io.WriteString(w, doc)
			}))
			t.Cleanup(srv.Close)
			c := newTestClient(t, WithPolling(10*time.Millisecond, time.Second))
			in := begin(t, c, "", paymentRequest(t, srv.URL, 1000, "lro"))
			resp, err := c.Do(context.Background(), in)
			require.ErrorIs(t, err, ErrOperationFailed)
			assert.ErrorIs(t, err, ErrFinalFailure)
			assert.Equal(t, doc, readBody(t, resp))
			assert.Equal(t, Failed, in.State)

			_, err = c.Do(context.Background(), in)
			assert.ErrorIs(t, err, ErrOperationFailed, "the failure replays as what it was")
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, 1, posts)
			assert.Equal(t, 1, gets)
		})
	}
}
