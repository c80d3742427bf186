package testserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCreatePayment(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	s, ts := startServer(t, WithServerClock(clock.Now))

	r := do(t, ts.Client(), ts.URL, pay("alice", "k-1"))
	p := decodePayment(t, r)
	assert.Regexp(t, `^pay_[a-z2-7]{24}$`, p.ID)
	assert.Equal(t, int64(1000), p.Amount)
	assert.Equal(t, "EUR", p.Currency)
	assert.Equal(t, "order-42", p.Reference)
	assert.Equal(t, "succeeded", p.Status)
	assert.True(t, clock.Now().Equal(p.Created))
	assert.Equal(t, "/v1/payments/"+p.ID, r.header.Get("Location"))
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	assert.Empty(t, r.header.Get("Idempotent-Replayed"))
	assert.Contains(t, string(r.body), `"created":"2030-01-02T03:04:05Z"`)

	replay := do(t, ts.Client(), ts.URL, pay("alice", "k-1"))
	assert.Equal(t, http.StatusCreated, replay.status)
	assert.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))
	assert.Equal(t, r.body, replay.body, "a replay is byte for byte")
	assert.Equal(t, r.header.Get("Location"), replay.header.Get("Location"))
	assert.Equal(t, 1, paymentCount(t, s))
	assert.Equal(t, 2, s.GuardedRequests())
}

func TestCreatePaymentAcceptsJSONWithParameters(t *testing.T) {
	t.Parallel()
	_, ts := startServer(t)
	c := pay("", "k")
	c.contentType = "application/json; charset=utf-8"
	c.body = `  {"currency":"USD", "amount": 1} ` + "\n"
	p := decodePayment(t, do(t, ts.Client(), ts.URL, c))
	assert.Equal(t, int64(1), p.Amount)
	assert.Empty(t, p.Reference)

	c.key = "k2"
	c.body = fmt.Sprintf(`{"amount":9223372036854775807,"currency":"JPY","reference":%q}`, strings.Repeat("é", maxReferenceLength))
	p = decodePayment(t, do(t, ts.Client(), ts.URL, c))
	assert.Equal(t, int64(9223372036854775807), p.Amount)
}

// TestBadInputIsAProblemNeverA5xx walks every way a request can be wrong.
func TestBadInputIsAProblemNeverA5xx(t *testing.T) {
	t.Parallel()
	body := func(s string) call { c := pay("alice", "k"); c.body = s; return c }
	withCT := func(ct string) call {
		c := call{method: "POST", path: "/v1/payments", token: "alice", key: "k"}
		c.contentType = ct
		return c
	}
	longRef := fmt.Sprintf(`{"amount":1,"currency":"EUR","reference":%q}`, strings.Repeat("x", maxReferenceLength+1))
	cases := []struct {
		name   string
		call   call
		status int
		suffix string
		detail string // a fragment the detail must contain
	}{
		{"missing key", call{method: "POST", path: "/v1/payments", body: `{"amount":1,"currency":"EUR"}`}, 400, ProblemMissingKey, ""},
		{"invalid key", call{method: "POST", path: "/v1/payments", key: "bad key", body: `{"amount":1,"currency":"EUR"}`}, 400, ProblemInvalidKey, ""},
		{"malformed authorization", call{method: "POST", path: "/v1/payments", key: "k", body: `{}`, header: http.Header{"Authorization": {"Basic abc"}}}, 401, ProblemUnauthorized, ""},
		{"malformed authorization on GET", call{method: "GET", path: "/v1/payments", header: http.Header{"Authorization": {"Bearer"}}}, 401, ProblemUnauthorized, ""},
		{"text/plain", withCT("text/plain"), 415, ProblemUnsupportedMedia, "application/json"},
		{"no content type", call{method: "POST", path: "/v1/payments", key: "k"}, 415, ProblemUnsupportedMedia, "application/json"},
		{"broken content type", withCT("application/json; charset"), 415, ProblemUnsupportedMedia, ""},
		{"empty body", withCT("application/json"), 400, ProblemInvalidRequest, "JSON object"},
		{"malformed JSON", body(`{"amount":`), 400, ProblemInvalidRequest, "JSON"},
		{"unterminated object", body(`{"amount":1`), 400, ProblemInvalidRequest, ""},
		{"trailing data", body(`{"amount":1,"currency":"EUR"} x`), 400, ProblemInvalidRequest, "after the JSON object"},
		{"two objects", body(`{"amount":1,"currency":"EUR"}{}`), 400, ProblemInvalidRequest, "after the JSON object"},
		{"array", body(`[1]`), 400, ProblemInvalidRequest, "JSON object"},
		{"null", body(`null`), 400, ProblemInvalidRequest, "JSON object"},
		{"string", body(`"x"`), 400, ProblemInvalidRequest, "JSON object"},
		{"missing amount", body(`{"currency":"EUR"}`), 400, ProblemInvalidRequest, "amount"},
		{"float amount", body(`{"amount":10.5,"currency":"EUR"}`), 400, ProblemInvalidRequest, "amount"},
		{"integral float amount", body(`{"amount":10.0,"currency":"EUR"}`), 400, ProblemInvalidRequest, "amount"},
		{"exponent amount", body(`{"amount":1e3,"currency":"EUR"}`), 400, ProblemInvalidRequest, "amount"},
		{"string amount", body(`{"amount":"1000","currency":"EUR"}`), 400, ProblemInvalidRequest, "amount"},
		{"null amount", body(`{"amount":null,"currency":"EUR"}`), 400, ProblemInvalidRequest, "amount"},
		{"zero amount", body(`{"amount":0,"currency":"EUR"}`), 400, ProblemInvalidRequest, "amount"},
		{"negative amount", body(`{"amount":-5,"currency":"EUR"}`), 400, ProblemInvalidRequest, "amount"},
		{"overflowing amount", body(`{"amount":9223372036854775808,"currency":"EUR"}`), 400, ProblemInvalidRequest, "amount"},
		{"missing currency", body(`{"amount":1}`), 400, ProblemInvalidRequest, "currency"},
		{"lower-case currency", body(`{"amount":1,"currency":"eur"}`), 400, ProblemInvalidRequest, "currency"},
		{"long currency", body(`{"amount":1,"currency":"EURO"}`), 400, ProblemInvalidRequest, "currency"},
		{"numeric currency", body(`{"amount":1,"currency":978}`), 400, ProblemInvalidRequest, "currency"},
		{"reference too long", body(longRef), 400, ProblemInvalidRequest, "reference"},
		{"reference with NUL", body(`{"amount":1,"currency":"EUR","reference":"a\u0000b"}`), 400, ProblemInvalidRequest, "control characters"},
		{"reference with newline", body(`{"amount":1,"currency":"EUR","reference":"a\nb"}`), 400, ProblemInvalidRequest, "control characters"},
		{"reference not a string", body(`{"amount":1,"currency":"EUR","reference":7}`), 400, ProblemInvalidRequest, "reference"},
		{"unknown field", body(`{"amount":1,"currency":"EUR","tip":5}`), 400, ProblemInvalidRequest, `"tip"`},
		{"field in other case", body(`{"Amount":1,"currency":"EUR"}`), 400, ProblemInvalidRequest, `"Amount"`},
		{"duplicate field", body(`{"amount":1,"amount":2,"currency":"EUR"}`), 400, ProblemInvalidRequest, `"amount"`},
		{"body too large", body(`{"amount":1,"currency":"EUR","reference":"` + strings.Repeat("x", 2048) + `"}`), 413, ProblemBodyTooLarge, ""},
		{"unknown payment", call{method: "GET", path: "/v1/payments/pay_nope"}, 404, ProblemNotFound, "payment"},
		{"unknown operation", call{method: "GET", path: "/v1/operations/op_nope"}, 404, ProblemNotFound, "operation"},
		{"unknown path", call{method: "GET", path: "/v2/nothing"}, 404, ProblemNotFound, ""},
		{"trailing slash", call{method: "GET", path: "/v1/payments/"}, 404, ProblemNotFound, ""},
		{"admin disabled", call{method: "GET", path: "/admin/faults"}, 404, ProblemNotFound, ""},
		{"DELETE payments", call{method: "DELETE", path: "/v1/payments"}, 405, ProblemMethodNotAllowed, "GET, HEAD, POST"},
		{"PATCH payments", call{method: "PATCH", path: "/v1/payments", key: "k", body: `{}`}, 405, ProblemMethodNotAllowed, ""},
		{"PUT payment", call{method: "PUT", path: "/v1/payments/pay_x", body: `{}`}, 405, ProblemMethodNotAllowed, "GET, HEAD"},
		{"GET payouts", call{method: "GET", path: "/v1/payouts"}, 405, ProblemMethodNotAllowed, "POST"},
		{"POST operation", call{method: "POST", path: "/v1/operations/op_x", key: "k", body: `{}`}, 405, ProblemMethodNotAllowed, "GET, HEAD"},
		{"payout float amount", call{method: "POST", path: "/v1/payouts", key: "k", body: `{"amount":1.5,"currency":"EUR"}`}, 400, ProblemInvalidRequest, "amount"},
	}
	s, ts := startServer(t, WithServerMaxBody(1024))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.call.key == "k" {
				tc.call.key = "key-" + strings.ReplaceAll(tc.name, " ", "-") // cases run concurrently
			}
			r := do(t, ts.Client(), ts.URL, tc.call)
			require.Equal(t, tc.status, r.status, "body: %s", r.body)
			p := r.problem(t)
			assert.Equal(t, ProblemTypePrefix+tc.suffix, p.Type)
			assert.Equal(t, tc.status, p.Status)
			assert.NotEmpty(t, p.Title)
			assert.Contains(t, p.Detail, tc.detail)
			if tc.status == http.StatusMethodNotAllowed {
				assert.NotEmpty(t, r.header.Get("Allow"))
			}
		})
	}
	t.Cleanup(func() { assert.Equal(t, 0, paymentCount(t, s), "no bad request made a payment") })
}

// TestRejectedRequestLeavesTheKeyFree shows a validation error is not
// stored: the corrected request with the same key runs.
func TestRejectedRequestLeavesTheKeyFree(t *testing.T) {
	t.Parallel()
	_, ts := startServer(t)
	bad := pay("alice", "k")
	bad.body = `{"amount":-1,"currency":"EUR"}`
	assert.Equal(t, http.StatusBadRequest, do(t, ts.Client(), ts.URL, bad).status)
	r := do(t, ts.Client(), ts.URL, pay("alice", "k"))
	assert.Equal(t, http.StatusCreated, r.status, "body: %s", r.body)
}

func TestPaymentsArePerPrincipal(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	_, ts := startServer(t, WithServerClock(clock.Now))
	var alice []Payment
	for i := range 3 {
		alice = append(alice, decodePayment(t, do(t, ts.Client(), ts.URL, pay("alice", fmt.Sprint("a", i)))))
		clock.Advance(time.Second)
	}
	bob := decodePayment(t, do(t, ts.Client(), ts.URL, pay("bob", "a0")))
	anon := decodePayment(t, do(t, ts.Client(), ts.URL, pay("", "a0")))

	list := do(t, ts.Client(), ts.URL, call{method: "GET", path: "/v1/payments", token: "alice"})
	require.Equal(t, http.StatusOK, list.status)
	var got paymentList
	require.NoError(t, json.Unmarshal(list.body, &got))
	assert.Equal(t, 3, got.Total)
	require.Len(t, got.Data, 3)
	assert.Equal(t, alice[2].ID, got.Data[0].ID, "newest first")
	assert.Equal(t, alice[0].ID, got.Data[2].ID)

	own := do(t, ts.Client(), ts.URL, call{method: "GET", path: "/v1/payments/" + bob.ID, token: "bob"})
	require.Equal(t, http.StatusOK, own.status)
	assert.Equal(t, bob, decodePaymentBody(t, own.body))

	other := do(t, ts.Client(), ts.URL, call{method: "GET", path: "/v1/payments/" + bob.ID, token: "alice"})
	assert.Equal(t, http.StatusNotFound, other.status)
	assert.Equal(t, ProblemNotFound, other.problemType())

	anonGet := do(t, ts.Client(), ts.URL, call{method: "GET", path: "/v1/payments/" + anon.ID})
	assert.Equal(t, http.StatusOK, anonGet.status)

	empty := do(t, ts.Client(), ts.URL, call{method: "GET", path: "/v1/payments", token: "carol"})
	assert.JSONEq(t, `{"object":"list","url":"/v1/payments","has_more":false,"data":[],"total":0}`, string(empty.body))
}

func decodePaymentBody(t *testing.T, body []byte) Payment {
	t.Helper()
	var p Payment
	require.NoError(t, json.Unmarshal(body, &p))
	return p
}

// FuzzCreatePayment sends arbitrary bodies: the answer is 201 with a
// well-formed payment or a 4xx problem, never a 5xx.
func FuzzCreatePayment(f *testing.F) {
	for _, seed := range []string{
		`{"amount":1000,"currency":"EUR","reference":"r"}`,
		`{"amount":1,"currency":"USD"}`,
		`{"amount":1.0,"currency":"EUR"}`,
		`{"amount":"1","currency":"EUR"}`,
		`{"amount":1,"currency":"EUR"} {}`,
		`{"amount":1,"amount":1,"currency":"EUR"}`,
		`{"AMOUNT":1,"currency":"EUR"}`,
		`{"amount":1,"currency":"EUR","reference":"\ud800"}`,
		`[]`, `null`, ``, `{`, `{"amount":-0,"currency":"EUR"}`, `{"amount":1e400}`,
	} {
		f.Add(seed)
	}
	s, err := New()
	require.NoError(f, err)
	f.Cleanup(func() { _ = s.Close() })
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body string) {
		req := httptest.NewRequest(http.MethodPost, "/v1/payments", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "fuzz-"+newID(""))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch {
		case rec.Code == http.StatusCreated:
			var p Payment
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
			require.Positive(t, p.Amount)
			require.Regexp(t, `^[A-Z]{3}$`, p.Currency)
		case rec.Code >= 400 && rec.Code < 500:
			require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
		default:
			t.Fatalf("status %d for body %q: %s", rec.Code, body, rec.Body)
		}
	})
}

// GET /v1/payments pages as Stripe's lists do: a bounded default limit,
// limit up to 100, starting_after the last id of the page before.
func TestListPaymentsPages(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	_, ts := startServer(t, WithServerClock(clock.Now))
	const n = 25
	ids := make([]string, n)
	for i := range n {
		ids[n-1-i] = decodePayment(t, do(t, ts.Client(), ts.URL, pay("alice", fmt.Sprint("k", i)))).ID // newest first
		clock.Advance(time.Second)
	}
	list := func(query string) paymentList {
		t.Helper()
		r := do(t, ts.Client(), ts.URL, call{method: "GET", path: "/v1/payments" + query, token: "alice"})
		require.Equal(t, http.StatusOK, r.status, string(r.body))
		var got paymentList
		require.NoError(t, json.Unmarshal(r.body, &got))
		return got
	}
	first := list("")
	require.Len(t, first.Data, defaultListLimit, "a bounded page by default")
	assert.True(t, first.HasMore)
	assert.Equal(t, n, first.Total)
	assert.Equal(t, "list", first.Object)

	var seen []string
	for page, after := 0, ""; ; page++ {
		require.Less(t, page, n, "paging ends")
		query := "?limit=7"
		if after != "" {
			query += "&starting_after=" + after
		}
		got := list(query)
		for _, p := range got.Data {
			seen = append(seen, p.ID)
		}
		if !got.HasMore {
			break
		}
		after = got.Data[len(got.Data)-1].ID
	}
	assert.Equal(t, ids, seen, "every payment once, newest first")

	for _, bad := range []string{"?limit=0", "?limit=101", "?limit=x", "?starting_after=pay_nope", "?ending_before=" + ids[0]} {
		r := do(t, ts.Client(), ts.URL, call{method: "GET", path: "/v1/payments" + bad, token: "alice"})
		assert.Equal(t, http.StatusBadRequest, r.status, bad)
		assert.Equal(t, ProblemInvalidRequest, r.problemType(), bad)
	}
	other := do(t, ts.Client(), ts.URL, call{method: "GET", path: "/v1/payments?starting_after=" + ids[0], token: "bob"})
	assert.Equal(t, http.StatusBadRequest, other.status, "another principal's id is no cursor")
}
