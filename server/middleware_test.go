package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

const paymentBody = `{"amount":1000,"currency":"EUR","reference":"order-42"}`

func TestMissingKeyIsRejected(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := &countingHandler{}
	rec := serve(r.idem.Wrap(paymentsRoute, h), call{method: http.MethodPost, route: paymentsRoute, body: paymentBody})
	assert.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Equal(t, server.ProblemMissingKey, problemType(t, rec))
	assert.Zero(t, h.runs())
}

func TestMalformedKeyIsRejected(t *testing.T) {
	t.Parallel()
	for name, keys := range map[string][]string{
		"empty":            {""},
		"only spaces":      {"   "},
		"empty quoted":     {`""`},
		"256 characters":   {strings.Repeat("k", 256)},
		"inner space":      {"abc def"},
		"control char":     {"abc\x01"},
		"non-ASCII":        {"clé"},
		"two headers":      {"key-1", "key-2"},
		"unclosed quote":   {`"abc`},
		"bad escape":       {`"ab\c"`},
		"text after quote": {`"abc"def`},
		"bad parameter":    {`"abc";Foo=1`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			h := &countingHandler{}
			c := post("", paymentBody)
			c.keys = keys
			rec := serve(r.idem.Wrap(paymentsRoute, h), c)
			assert.Equal(t, http.StatusBadRequest, rec.Code)
			assert.Equal(t, server.ProblemInvalidKey, problemType(t, rec))
			assert.Zero(t, h.runs())
		})
	}
}

func TestQuotedKeyNamesTheSameKeyAsBare(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := &countingHandler{}
	wrapped := r.idem.Wrap(paymentsRoute, h)

	first := serve(wrapped, post(`"6f1c-\"q\"-\\"`, paymentBody))
	require.Equal(t, http.StatusCreated, first.Code)
	second := serve(wrapped, post(`6f1c-"q"-\`, paymentBody))
	assert.Equal(t, http.StatusCreated, second.Code)
	assert.True(t, replayed(second))
	assert.Equal(t, 1, h.runs())
}

// draft-07 §2.1 defines the key as an RFC 8941 String in an Item: spaces
// inside the quotes are part of the key, parameters are not.
func TestSFStringKeysWithSpacesAndParameters(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := &countingHandler{}
	wrapped := r.idem.Wrap(paymentsRoute, h)

	first := serve(wrapped, post(`"order 42 pay"`, paymentBody))
	require.Equal(t, http.StatusCreated, first.Code, first.Body.String())
	withParams := serve(wrapped, post(`"order 42 pay";attempt=2;v="x"`, paymentBody))
	assert.True(t, replayed(withParams), "parameters are not part of the key")
	other := serve(wrapped, post(`"order 42  pay"`, paymentBody))
	assert.Equal(t, http.StatusCreated, other.Code)
	assert.False(t, replayed(other), "another spelling inside the quotes is another key")
	assert.Equal(t, 2, h.runs())

	echo := newRig(t, server.WithKeyEcho())
	echoed := serve(echo.idem.Wrap(paymentsRoute, &countingHandler{}), post(`"a \"b\" c";p=1`, paymentBody))
	got := echoed.Header().Get(server.KeyHeader)
	assert.Equal(t, `"a \"b\" c"`, got, "a key with a space is echoed quoted")
	key, err := server.ParseKey([]string{got})
	require.NoError(t, err)
	assert.Equal(t, `a "b" c`, key)
}

func TestFirstRequestRunsTheHandlerAndStoresTheAnswer(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := &countingHandler{}
	rec := serve(r.idem.Wrap(paymentsRoute, h), post("key-1", paymentBody))

	require.Equal(t, http.StatusCreated, rec.Code)
	assert.Equal(t, 1, h.runs())
	assert.False(t, replayed(rec), "a first answer is not a replay")
	assert.Empty(t, rec.Header().Get(server.ResourceIDHeader), "the resource id header is for the layer only")
	assert.Equal(t, "trace-1", rec.Header().Get("X-Trace"), "the first answer carries every handler header")
	assert.JSONEq(t, `{"id":"pay_1","run":1,"echo":`+fmt.Sprintf("%q", paymentBody)+`}`, rec.Body.String(),
		"the handler reads the body the client sent")

	scope := server.Scope{Principal: server.AnonymousPrincipal, Method: http.MethodPost, Route: paymentsRoute}
	_, stored, err := r.store.Reserve(t.Context(), scope, "key-1", server.Fingerprint(http.MethodPost, paymentsRoute, []byte(paymentBody)), time.Minute)
	require.NoError(t, err)
	require.NotNil(t, stored)
	assert.Equal(t, server.StateCompleted, stored.State)
	require.NotNil(t, stored.Response)
	assert.Equal(t, "pay_1", stored.Response.ResourceID)
	assert.Equal(t, rec.Body.Bytes(), stored.Response.Body)
	assert.Equal(t, r.clock.Now().Add(server.DefaultRetention), stored.ExpiresAt)
}

func TestReplayIsByteIdentical(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.WithStoredHeaders("x-request-cost"))
	h := &countingHandler{}
	wrapped := r.idem.Wrap(paymentsRoute, h)

	first := serve(wrapped, post("key-1", paymentBody))
	require.Equal(t, http.StatusCreated, first.Code)
	for range 3 {
		again := serve(wrapped, post("key-1", paymentBody))
		assert.Equal(t, first.Code, again.Code)
		assert.Equal(t, first.Body.Bytes(), again.Body.Bytes())
		assert.True(t, replayed(again))
		for _, name := range []string{"Content-Type", "Location", "X-Request-Cost"} {
			assert.Equal(t, first.Header().Values(name), again.Header().Values(name), name)
		}
		assert.Empty(t, again.Header().Get("X-Trace"), "headers not marked are not stored")
		assert.Empty(t, again.Header().Get(server.ResourceIDHeader))
	}
	assert.Equal(t, 1, h.runs())
}

func TestReplayIgnoresJSONSpelling(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := &countingHandler{}
	wrapped := r.idem.Wrap(paymentsRoute, h)

	require.Equal(t, http.StatusCreated, serve(wrapped, post("key-1", paymentBody)).Code)
	respelled := "{ \"reference\": \"order-42\",\n \"currency\": \"EUR\", \"amount\": 1000.0 }"
	again := serve(wrapped, post("key-1", respelled))
	assert.Equal(t, http.StatusCreated, again.Code)
	assert.True(t, replayed(again))
	assert.Equal(t, 1, h.runs())
}

func TestDifferentPayloadUnderTheSameKeyIsRejected(t *testing.T) {
	t.Parallel()
	t.Run("after completion", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		h := &countingHandler{}
		wrapped := r.idem.Wrap(paymentsRoute, h)
		require.Equal(t, http.StatusCreated, serve(wrapped, post("key-1", paymentBody)).Code)

		rec := serve(wrapped, post("key-1", `{"amount":9999,"currency":"EUR"}`))
		assert.Equal(t, http.StatusUnprocessableEntity, rec.Code)
		assert.Equal(t, server.ProblemKeyReused, problemType(t, rec))
		assert.Equal(t, 1, h.runs())
	})
	t.Run("while executing", func(t *testing.T) {
		t.Parallel()
		r := newRig(t)
		h := newBlockingHandler()
		wrapped := r.idem.Wrap(paymentsRoute, h)
		done := make(chan *httptest.ResponseRecorder)
		go func() { done <- serve(wrapped, post("key-1", paymentBody)) }()
		<-h.entered

		rec := serve(wrapped, post("key-1", `{"amount":9999,"currency":"EUR"}`))
		assert.Equal(t, http.StatusUnprocessableEntity, rec.Code)
		assert.Equal(t, server.ProblemKeyReused, problemType(t, rec))
		close(h.release)
		assert.Equal(t, http.StatusCreated, (<-done).Code)
	})
}

func TestConcurrentRetryIsAnsweredInProgress(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		opts       []server.Option
		retryAfter string
	}{
		"default":    {nil, "1"},
		"configured": {[]server.Option{server.WithInProgressRetryAfter(3 * time.Second)}, "3"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, tc.opts...)
			h := newBlockingHandler()
			wrapped := r.idem.Wrap(paymentsRoute, h)
			done := make(chan *httptest.ResponseRecorder)
			go func() { done <- serve(wrapped, post("key-1", paymentBody)) }()
			<-h.entered

			rec := serve(wrapped, post("key-1", paymentBody))
			assert.Equal(t, http.StatusConflict, rec.Code)
			assert.Equal(t, server.ProblemInProgress, problemType(t, rec))
			assert.Equal(t, tc.retryAfter, rec.Header().Get("Retry-After"))

			close(h.release)
			first := <-done
			require.Equal(t, http.StatusCreated, first.Code)
			again := serve(wrapped, post("key-1", paymentBody))
			assert.True(t, replayed(again))
			assert.Equal(t, first.Body.String(), again.Body.String())
			assert.EqualValues(t, 1, h.calls.Load())
		})
	}
}

func TestUnreachableStoreFailsClosed(t *testing.T) {
	t.Parallel()
	h := &countingHandler{}
	idem := mustNew(t, brokenStore{Store: server.NewMemoryStore()})
	rec := serve(idem.Wrap(paymentsRoute, h), post("key-1", paymentBody))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, server.ProblemStoreUnavailable, problemType(t, rec))
	assert.NotEmpty(t, rec.Header().Get("Retry-After"))
	assert.Zero(t, h.runs(), "the handler must never run without a reservation")
}

func TestAnswersRefusedBeforeExecutionLeaveTheKeyFree(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401, 403, 404, 405, 408, 409, 413, 415, 422, 425, 429} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			h := &statusHandler{status: status}
			wrapped := r.idem.Wrap(paymentsRoute, h)
			for run := 1; run <= 2; run++ {
				rec := serve(wrapped, post("key-1", paymentBody))
				assert.Equal(t, status, rec.Code)
				assert.False(t, replayed(rec))
				assert.JSONEq(t, fmt.Sprintf(`{"status":%d,"run":%d}`, status, run), rec.Body.String())
			}
			assert.EqualValues(t, 2, h.calls.Load(), "a retry runs the handler again")
		})
	}
}

func TestOtherClientErrorsAreFinal(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := &statusHandler{status: http.StatusPaymentRequired}
	wrapped := r.idem.Wrap(paymentsRoute, h)
	first := serve(wrapped, post("key-1", paymentBody))
	again := serve(wrapped, post("key-1", paymentBody))
	assert.Equal(t, http.StatusPaymentRequired, again.Code)
	assert.True(t, replayed(again))
	assert.Equal(t, first.Body.String(), again.Body.String())
	assert.EqualValues(t, 1, h.calls.Load())
}

func TestServerErrorsReleaseTheKeyByDefault(t *testing.T) {
	t.Parallel()
	for _, status := range []int{500, 502, 504} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			h := &statusHandler{status: status}
			wrapped := r.idem.Wrap(paymentsRoute, h)
			for range 2 {
				rec := serve(wrapped, post("key-1", paymentBody))
				assert.Equal(t, status, rec.Code)
				assert.False(t, replayed(rec))
			}
			assert.EqualValues(t, 2, h.calls.Load())
		})
	}
}

func TestServerErrorsAreStoredWithStore5xx(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.WithStore5xx(true))
	h := &statusHandler{status: http.StatusBadGateway}
	wrapped := r.idem.Wrap(paymentsRoute, h)
	first := serve(wrapped, post("key-1", paymentBody))
	again := serve(wrapped, post("key-1", paymentBody))
	assert.Equal(t, http.StatusBadGateway, again.Code)
	assert.True(t, replayed(again))
	assert.Equal(t, first.Body.String(), again.Body.String())
	assert.EqualValues(t, 1, h.calls.Load())
}

func TestPanicReleasesTheKeyAndAnswers500(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := &panicHandler{}
	wrapped := r.idem.Wrap(paymentsRoute, h)
	for range 2 {
		rec := serve(wrapped, post("key-1", paymentBody))
		assert.Equal(t, http.StatusInternalServerError, rec.Code)
		assert.Equal(t, server.ProblemInternal, problemType(t, rec))
		assert.False(t, replayed(rec))
	}
	assert.EqualValues(t, 2, h.calls.Load(), "a panic must not keep the key")
	assert.Contains(t, r.logs.String(), "payment processor exploded")
}

func TestPanicIsStoredWithStore5xx(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.WithStore5xx(true))
	h := &panicHandler{}
	wrapped := r.idem.Wrap(paymentsRoute, h)
	serve(wrapped, post("key-1", paymentBody))
	again := serve(wrapped, post("key-1", paymentBody))
	assert.Equal(t, http.StatusInternalServerError, again.Code)
	assert.Equal(t, server.ProblemInternal, problemType(t, again))
	assert.True(t, replayed(again))
	assert.EqualValues(t, 1, h.calls.Load())
}

func TestAbortHandlerPanicReleasesTheKeyAndAborts(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	calls := 0
	wrapped := r.idem.Wrap(paymentsRoute, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		calls++
		panic(http.ErrAbortHandler)
	}))
	for range 2 {
		assert.PanicsWithValue(t, http.ErrAbortHandler, func() { serve(wrapped, post("key-1", paymentBody)) })
	}
	assert.Equal(t, 2, calls)
}

func TestKeyPastRetentionIsNew(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.WithRetention(time.Hour))
	h := &countingHandler{}
	wrapped := r.idem.Wrap(paymentsRoute, h)
	require.Equal(t, http.StatusCreated, serve(wrapped, post("key-1", paymentBody)).Code)

	r.clock.Advance(59 * time.Minute)
	assert.True(t, replayed(serve(wrapped, post("key-1", paymentBody))), "still within retention")

	r.clock.Advance(time.Minute)
	rec := serve(wrapped, post("key-1", paymentBody))
	assert.Equal(t, http.StatusCreated, rec.Code)
	assert.False(t, replayed(rec))
	assert.Equal(t, 2, h.runs())
}

func TestAcceptedIsReplayedIdentically(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := &acceptedHandler{}
	wrapped := r.idem.Wrap("/v1/payouts", h)
	c := post("key-1", `{"amount":500,"currency":"EUR"}`)
	c.route = "/v1/payouts"

	first := serve(wrapped, c)
	require.Equal(t, http.StatusAccepted, first.Code)
	for range 2 {
		again := serve(wrapped, c)
		assert.Equal(t, http.StatusAccepted, again.Code)
		assert.True(t, replayed(again))
		assert.Equal(t, "/v1/operations/op_1", again.Header().Get("Location"))
		assert.Equal(t, "2", again.Header().Get("Retry-After"))
		assert.Equal(t, first.Body.Bytes(), again.Body.Bytes())
	}
	assert.EqualValues(t, 1, h.calls.Load())
}

func TestUnguardedMethodsPassThroughUntouched(t *testing.T) {
	t.Parallel()
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete, http.MethodOptions} {
		t.Run(method, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, server.WithMaxBody(4))
			var sawBody string
			var sawHeld bool
			wrapped := r.idem.Wrap(paymentsRoute, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				b := make([]byte, 64)
				n, _ := req.Body.Read(b)
				sawBody = string(b[:n])
				_, sawHeld = server.HeldFrom(req.Context())
				w.Header().Set(server.ResourceIDHeader, "kept")
				w.WriteHeader(http.StatusTeapot)
			}))
			c := call{method: method, route: paymentsRoute, body: "a body longer than the limit", token: "tok"}
			for range 2 {
				rec := serve(wrapped, c)
				assert.Equal(t, http.StatusTeapot, rec.Code)
				assert.Equal(t, "kept", rec.Header().Get(server.ResourceIDHeader), "the answer is not rewritten")
				assert.False(t, replayed(rec))
			}
			assert.Equal(t, "a body longer than the limit", sawBody)
			assert.False(t, sawHeld)
		})
	}
}

func TestMalformedAuthorizationIsUnauthorized(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := &countingHandler{}
	req := post("key-1", paymentBody).request()
	req.Header.Set("Authorization", "Basic dXNlcjpwYXNz")
	rec := httptest.NewRecorder()
	r.idem.Wrap(paymentsRoute, h).ServeHTTP(rec, req)
	assert.Equal(t, http.StatusUnauthorized, rec.Code)
	assert.Equal(t, server.ProblemUnauthorized, problemType(t, rec))
	assert.Zero(t, h.runs())
}

func TestBodyTooLargeIsRejectedAndNotStored(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.WithMaxBody(int64(len(paymentBody))))
	h := &countingHandler{}
	wrapped := r.idem.Wrap(paymentsRoute, h)

	big := post("key-1", paymentBody+" ")
	rec := serve(wrapped, big)
	assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
	assert.Equal(t, server.ProblemBodyTooLarge, problemType(t, rec))

	// Without a Content-Length the limit is enforced while reading.
	req := big.request()
	req.ContentLength = -1
	rec = httptest.NewRecorder()
	wrapped.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
	assert.Zero(t, h.runs())

	// Nothing was stored: the key is free for a body within the limit.
	assert.Equal(t, http.StatusCreated, serve(wrapped, post("key-1", paymentBody)).Code)
}

func TestPrincipalsAreIndependent(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := &countingHandler{}
	wrapped := r.idem.Wrap(paymentsRoute, h)

	alice := serve(wrapped, post("key-1", paymentBody).withToken("alice"))
	bob := serve(wrapped, post("key-1", paymentBody).withToken("bob"))
	anonymous := serve(wrapped, post("key-1", paymentBody))
	for _, rec := range []*httptest.ResponseRecorder{alice, bob, anonymous} {
		assert.Equal(t, http.StatusCreated, rec.Code)
		assert.False(t, replayed(rec), "no replay across principals")
	}
	assert.Equal(t, 3, h.runs())
	assert.NotEqual(t, alice.Body.String(), bob.Body.String())

	again := serve(wrapped, post("key-1", paymentBody).withToken("alice"))
	assert.True(t, replayed(again))
	assert.Equal(t, alice.Body.String(), again.Body.String())
}

func TestRoutesAreIndependent(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := &countingHandler{}
	payments := r.idem.Wrap(paymentsRoute, h)
	refunds := r.idem.Wrap("/v1/refunds", h)

	first := serve(payments, post("key-1", paymentBody))
	refundCall := post("key-1", paymentBody)
	refundCall.route = "/v1/refunds"
	second := serve(refunds, refundCall)
	assert.False(t, replayed(second))
	assert.Equal(t, 2, h.runs())
	assert.NotEqual(t, first.Body.String(), second.Body.String())

	patch := post("key-1", paymentBody)
	patch.method = http.MethodPatch
	assert.False(t, replayed(serve(payments, patch)), "the method is part of the scope")
	assert.Equal(t, 3, h.runs())
}

func TestConcurrentSameKeyRunsTheHandlerOnce(t *testing.T) {
	t.Parallel()
	const clients = 50
	r := newRig(t)
	h := &countingHandler{}
	wrapped := r.idem.Wrap(paymentsRoute, h)

	start := make(chan struct{})
	answers := make([]*httptest.ResponseRecorder, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = serve(wrapped, post("key-1", paymentBody))
		}()
	}
	close(start)
	wg.Wait()

	require.Equal(t, 1, h.runs(), "the handler must run exactly once")
	var original string
	originals := 0
	for _, rec := range answers {
		switch rec.Code {
		case http.StatusCreated:
			if !replayed(rec) {
				originals++
				original = rec.Body.String()
			}
		case http.StatusConflict:
			assert.Equal(t, server.ProblemInProgress, problemType(t, rec))
			assert.NotEmpty(t, rec.Header().Get("Retry-After"))
		default:
			t.Errorf("unexpected answer %d: %s", rec.Code, rec.Body)
		}
	}
	require.Equal(t, 1, originals)
	for _, rec := range answers {
		if rec.Code == http.StatusCreated {
			assert.Equal(t, original, rec.Body.String())
		}
	}
}

func TestStaleOwnerCannotOverwriteTheTakeover(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.WithLease(10*time.Second))
	h := newBlockingHandler()
	wrapped := r.idem.Wrap(paymentsRoute, h)

	staleDone := make(chan *httptest.ResponseRecorder)
	go func() { staleDone <- serve(wrapped, post("key-1", paymentBody)) }()
	<-h.entered

	assert.Equal(t, http.StatusConflict, serve(wrapped, post("key-1", paymentBody)).Code, "the lease still holds")
	r.clock.Advance(10 * time.Second)
	takeover := serve(wrapped, post("key-1", paymentBody))
	require.Equal(t, http.StatusCreated, takeover.Code)
	assert.JSONEq(t, `{"run":2}`, takeover.Body.String())

	close(h.release)
	stale := <-staleDone
	// The stale owner's answer is not the key's: its client is told to
	// retry, and the retry gets the stored answer.
	assert.Equal(t, http.StatusConflict, stale.Code, "a fenced owner never answers as if final")
	assert.Equal(t, server.ProblemInProgress, problemType(t, stale))
	assert.NotEmpty(t, stale.Header().Get("Retry-After"))
	assert.NotContains(t, stale.Body.String(), `"run"`)

	replay := serve(wrapped, post("key-1", paymentBody))
	assert.True(t, replayed(replay))
	assert.JSONEq(t, `{"run":2}`, replay.Body.String(), "the stored result is the new owner's")
	assert.Contains(t, r.logs.String(), "level=WARN msg=\"lease lost")
	assert.Contains(t, r.logs.String(), "not stored", "the log says the stale owner's answer was not kept")
	assert.NotContains(t, r.logs.String(), "stored result stands", "the log claims no result it cannot know of")
}

func TestHandlerCompletingTheKeyItselfIsNotCompletedTwice(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var calls int
	wrapped := r.idem.Wrap(paymentsRoute, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		calls++
		held, ok := server.HeldFrom(req.Context())
		require.True(t, ok, "a guarded handler holds the reservation")
		assert.Equal(t, "key-1", held.Reservation.Key)
		assert.Equal(t, server.DefaultRetention, held.Retention)
		resp := server.Response{Status: http.StatusCreated, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"id":"pay_x"}`), ResourceID: "pay_x"}
		var effects int
		require.NoError(t, r.store.CompleteFunc(req.Context(), *held.Completion(resp), func() error { effects++; return nil }))
		require.Equal(t, 1, effects)
		held.MarkCompleted()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set(server.ResourceIDHeader, "pay_x")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(resp.Body)
	}))

	first := serve(wrapped, post("key-1", paymentBody))
	require.Equal(t, http.StatusCreated, first.Code)
	assert.Empty(t, first.Header().Get(server.ResourceIDHeader))
	again := serve(wrapped, post("key-1", paymentBody))
	assert.True(t, replayed(again))
	assert.Equal(t, first.Body.String(), again.Body.String())
	assert.Equal(t, 1, calls)
	assert.NotContains(t, r.logs.String(), "level=WARN")
	assert.NotContains(t, r.logs.String(), "level=ERROR")
}

func TestKeyIsSettledWhenTheClientGoesAway(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := &countingHandler{}
	ctx, cancel := context.WithCancel(t.Context())
	wrapped := r.idem.Wrap(paymentsRoute, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		cancel() // the client hangs up while the handler runs
		h.ServeHTTP(w, req)
	}))
	req := post("key-1", paymentBody).request().WithContext(ctx)
	wrapped.ServeHTTP(httptest.NewRecorder(), req)

	again := serve(wrapped, post("key-1", paymentBody))
	assert.True(t, replayed(again), "the answer was stored despite the cancelled request")
	assert.Equal(t, 1, h.runs())
}

func TestStoreFailureOnCompleteStillAnswers(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	store := server.NewMemoryStore()
	idem := mustNew(t, failingCompleteStore{Store: store},
		server.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	h := &countingHandler{}
	wrapped := idem.Wrap(paymentsRoute, h)

	rec := serve(wrapped, post("key-1", paymentBody))
	assert.Equal(t, http.StatusCreated, rec.Code)
	assert.Empty(t, rec.Header().Get(server.KeyExpiresHeader), "nothing was kept, so no expiry is promised")
	assert.Contains(t, logs.String(), "level=ERROR")
	assert.Contains(t, logs.String(), "could not store the response")
	again := serve(wrapped, post("key-1", paymentBody))
	assert.Equal(t, http.StatusConflict, again.Code, "the key stays reserved until its lease expires")
}

func TestFlushingHandlerWorks(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	wrapped := r.idem.Wrap(paymentsRoute, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("part one, "))
		w.(http.Flusher).Flush()
		require.NoError(t, http.NewResponseController(w).Flush())
		_, _ = w.Write([]byte("part two"))
	}))
	first := serve(wrapped, post("key-1", paymentBody))
	assert.Equal(t, http.StatusOK, first.Code)
	assert.Equal(t, "part one, part two", first.Body.String())
	assert.Equal(t, "text/plain; charset=utf-8", first.Header().Get("Content-Type"), "sniffed like net/http")
	again := serve(wrapped, post("key-1", paymentBody))
	assert.True(t, replayed(again))
	assert.Equal(t, first.Body.String(), again.Body.String())
	assert.Equal(t, first.Header().Get("Content-Type"), again.Header().Get("Content-Type"))
}

func TestLogsNeverCarryTheKeyOrTheBody(t *testing.T) {
	t.Parallel()
	const key = "secret-key-8d1e"
	r := newRig(t)
	wrapped := r.idem.Wrap(paymentsRoute, &panicHandler{})
	serve(wrapped, post(key, paymentBody))
	serve(wrapped, post(key, paymentBody+" "))

	logs := r.logs.String()
	require.NotEmpty(t, logs)
	assert.NotContains(t, logs, key)
	assert.NotContains(t, logs, "order-42")
	assert.Contains(t, logs, "key_hash="+server.KeyHash(key))
	sum := sha256.Sum256([]byte(key))
	assert.NotContains(t, logs, hex.EncodeToString(sum[:])[:8], "the plain hash would confirm a guessed key")
}

func TestAccessors(t *testing.T) {
	t.Parallel()
	idem := mustNew(t, server.NewMemoryStore())
	assert.Equal(t, server.DefaultLease, idem.Lease())
	assert.Equal(t, server.DefaultRetention, idem.Retention())

	idem = mustNew(t, server.NewMemoryStore(),
		server.WithLease(10*time.Second), server.WithRetention(time.Hour), server.WithLease(-1))
	assert.Equal(t, 10*time.Second, idem.Lease(), "a non-positive lease keeps the previous value")
	assert.Equal(t, time.Hour, idem.Retention())
}

func TestImpossibleStatusIsAnsweredAsPanic(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	calls := 0
	wrapped := r.idem.Wrap(paymentsRoute, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls++
		w.WriteHeader(42)
	}))
	for range 2 {
		rec := serve(wrapped, post("key-1", paymentBody))
		assert.Equal(t, http.StatusInternalServerError, rec.Code)
		assert.Equal(t, server.ProblemInternal, problemType(t, rec))
	}
	assert.Equal(t, 2, calls, "the key was released")
}

func TestInformationalStatusIsNotFinal(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	wrapped := r.idem.Wrap(paymentsRoute, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusCreated)
		w.WriteHeader(http.StatusOK) // ignored: the first final status wins
	}))
	assert.Equal(t, http.StatusCreated, serve(wrapped, post("key-1", paymentBody)).Code)
	again := serve(wrapped, post("key-1", paymentBody))
	assert.Equal(t, http.StatusCreated, again.Code)
	assert.True(t, replayed(again))
}
