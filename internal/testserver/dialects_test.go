package testserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/server"
)

// dialectCase is what one provider dialect answers, as the tests check it.
type dialectCase struct {
	name string
	// header names the key header; empty for Square's body field.
	header string
	// replayStatus is the status a replay of a 201 carries.
	replayStatus int
	// checkReplay checks the marks of a replay (header rec of the answer).
	checkReplay func(t *testing.T, r answer)
	// checkReused checks the answer to the same key with another body,
	// first being the first answer for the key.
	checkReused func(t *testing.T, r, first answer)
	// checkInProgress checks the answer to a duplicate sent while the
	// first request still runs.
	checkInProgress func(t *testing.T, r answer)
	// checkMissing checks the answer to a request without a key; nil when
	// the dialect runs such a request.
	checkMissing func(t *testing.T, r answer)
	// checkTooLong checks the answer to a key one over the limit.
	checkTooLong func(t *testing.T, r answer)
	maxKey       int
}

var dialectCases = []dialectCase{
	{
		name: "idem", header: "Idempotency-Key", replayStatus: http.StatusCreated, maxKey: 255,
		checkReplay: func(t *testing.T, r answer) { assert.Equal(t, "true", r.header.Get("Idempotent-Replayed")) },
		checkReused: func(t *testing.T, r, _ answer) { r.problem(t, http.StatusUnprocessableEntity, "key-reused") },
		checkInProgress: func(t *testing.T, r answer) {
			r.problem(t, http.StatusConflict, "in-progress")
			assert.Equal(t, "1", r.header.Get("Retry-After"))
		},
		checkMissing: func(t *testing.T, r answer) { r.problem(t, http.StatusBadRequest, "missing-key") },
		checkTooLong: func(t *testing.T, r answer) { r.problem(t, http.StatusBadRequest, "invalid-key") },
	},
	{
		name: "stripe", header: "Idempotency-Key", replayStatus: http.StatusCreated, maxKey: 255,
		// https://docs.stripe.com/error-low-level: "look for the header
		// Idempotent-Replayed: true".
		checkReplay: func(t *testing.T, r answer) { assert.Equal(t, "true", r.header.Get("Idempotent-Replayed")) },
		checkReused: func(t *testing.T, r, _ answer) {
			e := r.jsonAt(t, http.StatusBadRequest, "error")
			assert.Equal(t, "idempotency_error", e["type"])
			assert.NotEmpty(t, e["message"])
		},
		// As Stripe answered it (stripity-stripe issue 564): 409,
		// invalid_request_error, idempotency_key_in_use; no header
		// documented.
		checkInProgress: func(t *testing.T, r answer) {
			e := r.jsonAt(t, http.StatusConflict, "error")
			assert.Equal(t, "invalid_request_error", e["type"])
			assert.Equal(t, "idempotency_key_in_use", e["code"])
			assert.Equal(t, "https://stripe.com/docs/error-codes/idempotency-key-in-use", e["doc_url"])
			assert.Empty(t, r.header.Get("Retry-After"))
			assert.Empty(t, r.header.Get("Stripe-Should-Retry"), "no Stripe page or capture shows it on a 409")
		},
		checkTooLong: func(t *testing.T, r answer) {
			assert.Equal(t, "invalid_request_error", r.jsonAt(t, http.StatusBadRequest, "error")["type"])
		},
	},
	{
		name: "paypal", header: "PayPal-Request-Id", replayStatus: http.StatusOK, maxKey: 108,
		checkReplay: noReplayHeader,
		checkReused: func(t *testing.T, r, first answer) {
			// PayPal answers the first request's result for the id alone.
			assert.Equal(t, http.StatusOK, r.status)
			assert.Equal(t, first.body, r.body)
		},
		checkInProgress: func(t *testing.T, r answer) {
			e := r.json(t, http.StatusUnprocessableEntity)
			assert.Equal(t, "UNPROCESSABLE_ENTITY", e["name"])
			assert.NotEmpty(t, e["debug_id"])
			assert.NotEmpty(t, e["message"])
			assert.Equal(t, "PAYPAL_REQUEST_ID_PREVIOUSLY_USED", firstDetail(t, e, "details")["issue"])
			assert.Equal(t, "https://developer.paypal.com/api/orders/v2/#error-PAYPAL_REQUEST_ID_PREVIOUSLY_USED",
				firstDetail(t, e, "links")["href"])
		},
		checkTooLong: func(t *testing.T, r answer) {
			e := r.json(t, http.StatusBadRequest)
			assert.Equal(t, "INVALID_REQUEST", e["name"])
			assert.Equal(t, "INVALID_STRING_LENGTH", firstDetail(t, e, "details")["issue"])
		},
	},
	{
		name: "adyen", header: "Idempotency-Key", replayStatus: http.StatusCreated, maxKey: 64,
		checkReplay: noReplayHeader,
		checkReused: func(t *testing.T, r, first answer) {
			assert.Equal(t, http.StatusCreated, r.status)
			assert.Equal(t, first.body, r.body)
		},
		checkInProgress: func(t *testing.T, r answer) {
			e := r.json(t, http.StatusUnprocessableEntity)
			assert.EqualValues(t, http.StatusUnprocessableEntity, e["status"])
			assert.Equal(t, "704", e["errorCode"])
			assert.Equal(t, "request already processed or in progress", e["message"])
			assert.NotEmpty(t, e["errorType"])
			assert.Equal(t, "true", r.header.Get("Transient-Error"))
		},
		checkTooLong: func(t *testing.T, r answer) {
			e := r.json(t, http.StatusBadRequest)
			assert.EqualValues(t, http.StatusBadRequest, e["status"])
			assert.Equal(t, "validation", e["errorType"])
			assert.NotEmpty(t, e["message"])
		},
	},
	{
		name: "square", replayStatus: http.StatusCreated, maxKey: 45,
		checkReplay: noReplayHeader,
		checkReused: func(t *testing.T, r, _ answer) {
			e := firstDetail(t, r.json(t, http.StatusBadRequest), "errors")
			assert.Equal(t, "INVALID_REQUEST_ERROR", e["category"])
			assert.Equal(t, "IDEMPOTENCY_KEY_REUSED", e["code"])
		},
		checkInProgress: func(t *testing.T, r answer) {
			e := firstDetail(t, r.json(t, http.StatusConflict), "errors")
			assert.Equal(t, "CONFLICT", e["code"])
		},
		checkMissing: func(t *testing.T, r answer) {
			e := firstDetail(t, r.json(t, http.StatusBadRequest), "errors")
			assert.Equal(t, "INVALID_REQUEST_ERROR", e["category"])
			assert.Equal(t, "MISSING_REQUIRED_PARAMETER", e["code"])
			assert.Equal(t, "idempotency_key", e["field"])
		},
		checkTooLong: func(t *testing.T, r answer) {
			assert.Equal(t, "VALUE_TOO_LONG", firstDetail(t, r.json(t, http.StatusBadRequest), "errors")["code"])
		},
	},
	{
		name: "stripe-v2", header: "Idempotency-Key", replayStatus: http.StatusCreated, maxKey: 255,
		// https://docs.stripe.com/error-low-level scopes Idempotent-Replayed
		// to API v1; no v2 page documents a replay marker.
		checkReplay: noReplayHeader,
		checkReused: func(t *testing.T, r, _ answer) {
			e := r.jsonAt(t, http.StatusBadRequest, "error")
			assert.Equal(t, "idempotency_error", e["type"])
			assert.NotEmpty(t, e["message"])
		},
		checkInProgress: func(t *testing.T, r answer) {
			e := r.jsonAt(t, http.StatusConflict, "error")
			assert.Equal(t, "invalid_request_error", e["type"])
			assert.Equal(t, "idempotency_key_in_use", e["code"])
			assert.Empty(t, r.header.Get("Stripe-Should-Retry"), "documented for v1 only")
		},
		checkTooLong: func(t *testing.T, r answer) {
			assert.Equal(t, "invalid_request_error", r.jsonAt(t, http.StatusBadRequest, "error")["type"])
		},
	},
	checkoutCase,
}

func noReplayHeader(t *testing.T, r answer) {
	t.Helper()
	assert.Empty(t, r.header.Get("Idempotent-Replayed"), "the provider documents no replay header")
}

// answer is one response as the client saw it.
type answer struct {
	status int
	header http.Header
	body   string
}

func (a answer) json(t *testing.T, status int) map[string]any {
	t.Helper()
	require.Equal(t, status, a.status, a.body)
	require.Equal(t, "application/json", a.header.Get("Content-Type"), a.body)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(a.body), &m), a.body)
	return m
}

// jsonAt returns the object member name of a JSON answer.
func (a answer) jsonAt(t *testing.T, status int, name string) map[string]any {
	t.Helper()
	m, ok := a.json(t, status)[name].(map[string]any)
	require.True(t, ok, "no object %q in %s", name, a.body)
	return m
}

func (a answer) problem(t *testing.T, status int, suffix string) {
	t.Helper()
	require.Equal(t, status, a.status, a.body)
	require.Equal(t, "application/problem+json", a.header.Get("Content-Type"), a.body)
	var p testserver.Problem
	require.NoError(t, json.Unmarshal([]byte(a.body), &p))
	assert.Equal(t, testserver.ProblemTypePrefix+suffix, p.Type)
}

// firstDetail returns the first object of the array member name.
func firstDetail(t *testing.T, m map[string]any, name string) map[string]any {
	t.Helper()
	list, ok := m[name].([]any)
	require.True(t, ok && len(list) > 0, "no %q array in %v", name, m)
	d, ok := list[0].(map[string]any)
	require.True(t, ok)
	return d
}

// dialectServer is a reference server speaking one dialect over real HTTP.
type dialectServer struct {
	*testserver.Server
	dc  dialectCase
	url string
}

func startDialect(t *testing.T, dc dialectCase, opts ...testserver.Option) *dialectServer {
	t.Helper()
	srv, err := testserver.New(append([]testserver.Option{testserver.WithServerDialect(dc.name)}, opts...)...)
	require.NoError(t, err)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ts.Close()
		_ = srv.Close()
	})
	return &dialectServer{Server: srv, dc: dc, url: ts.URL}
}

// pay posts a payment of amount under key ("" sends none) the way the
// dialect carries keys.
func (s *dialectServer) pay(t *testing.T, key string, amount int) answer {
	t.Helper()
	body := fmt.Sprintf(`{"amount":%d,"currency":"EUR"}`, amount)
	if s.dc.header == "" && key != "" {
		body = fmt.Sprintf(`{"amount":%d,"idempotency_key":%q,"currency":"EUR"}`, amount, key)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.url+"/v1/payments", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if s.dc.header != "" && key != "" {
		req.Header.Set(s.dc.header, key)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func (s *dialectServer) payments(t *testing.T) int {
	t.Helper()
	n, err := s.Store().CountPayments(context.Background())
	require.NoError(t, err)
	return n
}

func TestDialects_FirstReplayAndReuse(t *testing.T) {
	t.Parallel()
	for _, dc := range dialectCases {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			s := startDialect(t, dc)
			first := s.pay(t, "order-42", 1000)
			require.Equal(t, http.StatusCreated, first.status, first.body)

			replay := s.pay(t, "order-42", 1000)
			assert.Equal(t, dc.replayStatus, replay.status)
			assert.Equal(t, first.body, replay.body, "a replay is the first answer's bytes")
			assert.Equal(t, first.header.Get("Location"), replay.header.Get("Location"))
			dc.checkReplay(t, replay)
			for _, a := range []answer{first, replay} {
				if dc.name == testserver.DefaultDialect {
					assert.NotEmpty(t, a.header.Get(server.KeyExpiresHeader), "this project's own header")
				} else {
					assert.Empty(t, a.header.Get(server.KeyExpiresHeader), "no provider documents %s", server.KeyExpiresHeader)
				}
			}

			dc.checkReused(t, s.pay(t, "order-42", 1001), replay)
			assert.Equal(t, 1, s.payments(t), "one key, one payment")
		})
	}
}

func TestDialects_ConcurrentDuplicatesMakeOnePayment(t *testing.T) {
	t.Parallel()
	for _, dc := range dialectCases {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			s := startDialect(t, dc)
			s.Faults().SetHandlerDelay(1500 * time.Millisecond)
			firstDone := make(chan answer, 1)
			go func() { firstDone <- s.pay(t, "dup", 1000) }()
			// The first request holds the key for 1.5 s; every duplicate
			// sent now finds it held.
			time.Sleep(200 * time.Millisecond)
			const duplicates = 4
			answers := make([]answer, duplicates)
			var wg sync.WaitGroup
			for i := range duplicates {
				wg.Add(1)
				go func() {
					defer wg.Done()
					answers[i] = s.pay(t, "dup", 1000)
				}()
			}
			wg.Wait()
			for _, a := range answers {
				dc.checkInProgress(t, a)
			}
			first := <-firstDone
			assert.Equal(t, http.StatusCreated, first.status, first.body)
			assert.Equal(t, 1, s.payments(t), "exactly one payment")
		})
	}
}

func TestDialects_MissingKey(t *testing.T) {
	t.Parallel()
	for _, dc := range dialectCases {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			s := startDialect(t, dc)
			a, b := s.pay(t, "", 1000), s.pay(t, "", 1000)
			if dc.checkMissing != nil {
				dc.checkMissing(t, a)
				assert.Zero(t, s.payments(t), "refused before anything ran")
				return
			}
			// Without a key the provider runs every request: a retry pays
			// again.
			assert.Equal(t, http.StatusCreated, a.status, a.body)
			assert.Equal(t, http.StatusCreated, b.status, b.body)
			assert.NotEqual(t, a.body, b.body)
			assert.Equal(t, 2, s.payments(t))
		})
	}
}

func TestDialects_KeyLengthLimit(t *testing.T) {
	t.Parallel()
	for _, dc := range dialectCases {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			s := startDialect(t, dc)
			ok := s.pay(t, strings.Repeat("k", dc.maxKey), 1000)
			assert.Equal(t, http.StatusCreated, ok.status, ok.body)
			dc.checkTooLong(t, s.pay(t, strings.Repeat("k", dc.maxKey+1), 1000))
			assert.Equal(t, 1, s.payments(t))
		})
	}
}

func TestAdyen_EchoesTheKey(t *testing.T) {
	t.Parallel()
	s := startDialect(t, dialectCases[3])
	require.Equal(t, "adyen", s.dc.name)
	for range 2 { // the first answer, then its replay
		a := s.pay(t, "echo-me", 1000)
		require.Equal(t, http.StatusCreated, a.status, a.body)
		assert.Equal(t, "echo-me", a.header.Get("Idempotency-Key"))
	}
}

func TestSquare_KeyFieldIsNotPartOfThePayload(t *testing.T) {
	t.Parallel()
	s := startDialect(t, dialectCases[4])
	require.Equal(t, "square", s.dc.name)
	first := s.pay(t, "sq-1", 1000)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	assert.NotContains(t, first.body, "sq-1", "the handler never sees the key")

	// The same payload with its members in another order is the same
	// request.
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.url+"/v1/payments",
		strings.NewReader(`{"currency":"EUR","idempotency_key":"sq-1","amount":1000}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, first.body, string(b))
	assert.Equal(t, 1, s.payments(t))
}

// badYearClock reads a time JSON cannot encode until fixed, so the
// payments handler answers 500 from inside the idempotency layer.
type badYearClock struct{ fixed atomic.Bool }

func (c *badYearClock) now() time.Time {
	if c.fixed.Load() {
		return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	}
	return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
}

func TestDialects_Handler500(t *testing.T) {
	t.Parallel()
	for name, storedByDialect := range map[string]bool{"stripe": true, "stripe-v2": false, "paypal": false, "checkout": false} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var dc dialectCase
			for _, c := range dialectCases {
				if c.name == name {
					dc = c
				}
			}
			clock := &badYearClock{}
			s := startDialect(t, dc, testserver.WithServerClock(clock.now))
			failed := s.pay(t, "k500", 1000)
			require.Equal(t, http.StatusInternalServerError, failed.status, failed.body)

			clock.fixed.Store(true)
			retry := s.pay(t, "k500", 1000)
			if storedByDialect {
				// Stripe saves the 500 once execution began and replays it.
				assert.Equal(t, http.StatusInternalServerError, retry.status)
				assert.Equal(t, failed.body, retry.body)
				assert.Zero(t, s.payments(t))
				return
			}
			assert.Equal(t, http.StatusCreated, retry.status, "a 5xx frees the key: the retry runs")
			assert.Equal(t, 1, s.payments(t))
		})
	}
}

func TestServerDialect_UnknownNameListsTheKnownOnes(t *testing.T) {
	t.Parallel()
	_, err := testserver.New(testserver.WithServerDialect("braintree"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown dialect "braintree"`)
	assert.Contains(t, err.Error(), "adyen, checkout, idem, paypal, shopify, square, stripe, stripe-v2")
	assert.NotContains(t, err.Error(), "\n")
	assert.Equal(t, []string{"adyen", "checkout", "idem", "paypal", "shopify", "square", "stripe", "stripe-v2"}, testserver.DialectNames())
}

func TestServerDialect_RetentionDefaults(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]time.Duration{
		"idem": testserver.DefaultRetention, "stripe": 24 * time.Hour, "stripe-v2": 30 * 24 * time.Hour, "paypal": 6 * time.Hour,
		"adyen": 7 * 24 * time.Hour, "square": testserver.DefaultRetention, "checkout": 24 * time.Hour, "shopify": testserver.DefaultRetention,
	} {
		srv, err := testserver.New(testserver.WithServerDialect(name))
		require.NoError(t, err)
		assert.Equal(t, want, srv.Retention(), name)
		require.NoError(t, srv.Close())
	}
	srv, err := testserver.New(testserver.WithServerDialect("adyen"), testserver.WithServerRetention(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, time.Hour, srv.Retention(), "an explicit retention wins over the dialect's")
	require.NoError(t, srv.Close())
}
