package server_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// The scope is the pattern; the path with its values is in the
// fingerprint, so one key sent to another order is key reuse, never the
// first order's answer.
func TestHandlerScopesByTheMuxPattern(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	h := &countingHandler{}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/orders/{id}/pay", h)
	guarded := r.idem.Handler(mux)
	first := serve(guarded, call{method: http.MethodPost, route: "/v1/orders/1/pay", keys: []string{"k"}, body: paymentBody})
	require.Equal(t, http.StatusCreated, first.Code)
	again := serve(guarded, call{method: http.MethodPost, route: "/v1/orders/2/pay", keys: []string{"k"}, body: paymentBody})
	assert.Equal(t, http.StatusUnprocessableEntity, again.Code, "both paths match one pattern, one scope, two requests")
	assert.False(t, replayed(again))
	assert.Equal(t, 1, h.runs())
	same := serve(guarded, call{method: http.MethodPost, route: "/v1/orders/1/pay", keys: []string{"k"}, body: paymentBody})
	assert.True(t, replayed(same), "the first order's retry replays")
}

// Member names are kept byte for byte: a name that is not UTF-8 is
// refused, and two names a decoder would both read as U+FFFD stay two
// payloads.
func TestWithKeyFieldRefusesNamesThatAreNotUTF8(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.WithKeyField("request_id"))
	h := &countingHandler{}
	wrapped := r.idem.Wrap(paymentsRoute, h)
	send := func(body string) *httptest.ResponseRecorder {
		return serve(wrapped, call{method: http.MethodPost, route: paymentsRoute, body: body})
	}
	bad := send("{\"request_id\":\"r-1\",\"amount\xff\":5}")
	assert.Equal(t, http.StatusBadRequest, bad.Code)
	assert.Equal(t, "application/problem+json", bad.Header().Get("Content-Type"))
	assert.Contains(t, bad.Body.String(), "UTF-8")
	assert.Equal(t, http.StatusBadRequest, send("{\"request_id\":\"r-1\",\"amount\xfe\":5}").Code)

	require.Equal(t, http.StatusCreated, send(`{"request_id":"r-2","\ud800":5}`).Code)
	assert.Equal(t, http.StatusUnprocessableEntity, send(`{"request_id":"r-2","\ud801":5}`).Code,
		"another lone surrogate is another payload")
	assert.Equal(t, 1, h.runs())
}

func TestWithMethodsChoosesWhatIsGuarded(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.WithMethods(http.MethodPut))
	h := r.idem.Wrap(paymentsRoute, &countingHandler{})
	post := serve(h, call{method: http.MethodPost, route: paymentsRoute, body: paymentBody})
	assert.Equal(t, http.StatusCreated, post.Code, "POST passes unguarded")
	put := serve(h, call{method: http.MethodPut, route: paymentsRoute, body: paymentBody})
	assert.Equal(t, http.StatusBadRequest, put.Code, "PUT needs a key")
}

func TestWithKeyFieldReadsTheKeyFromTheBody(t *testing.T) {
	t.Parallel()
	r := newRig(t, server.WithKeyField("request_id"))
	var seen []string
	h := r.idem.Wrap(paymentsRoute, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b := new(bytes.Buffer)
		_, _ = b.ReadFrom(req.Body)
		seen = append(seen, b.String())
		w.WriteHeader(http.StatusCreated)
	}))
	send := func(body string) *httptest.ResponseRecorder {
		return serve(h, call{method: http.MethodPost, route: paymentsRoute, body: body})
	}
	require.Equal(t, http.StatusCreated, send(`{"request_id":"r-1","amount":5}`).Code)
	assert.True(t, replayed(send(`{"amount":5,"request_id":"r-1"}`)))
	assert.Equal(t, []string{`{"amount":5}`}, seen, "the handler never sees the key member")
	assert.Equal(t, http.StatusBadRequest, send(`{"amount":5}`).Code, "the key is required")
}
