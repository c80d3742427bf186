package testserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testAdminToken = "admin-secret"

func admin(method, body string) call {
	return call{method: method, path: adminFaultsPath, token: testAdminToken, body: body}
}

func decodeFaults(t *testing.T, r reply) faultDocument {
	t.Helper()
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var doc faultDocument
	require.NoError(t, json.Unmarshal(r.body, &doc))
	return doc
}

func TestAdminNeedsTheToken(t *testing.T) {
	t.Parallel()
	_, ts := startServer(t, WithAdminToken(testAdminToken))
	for name, c := range map[string]call{
		"no token":    {method: "GET", path: adminFaultsPath},
		"wrong token": {method: "GET", path: adminFaultsPath, token: "admin-secreT"},
		"prefix":      {method: "DELETE", path: adminFaultsPath, token: "admin"},
		"basic":       {method: "POST", path: adminFaultsPath, header: http.Header{"Authorization": {"Basic " + testAdminToken}}, body: `{}`},
	} {
		r := do(t, ts.Client(), ts.URL, c)
		assert.Equal(t, http.StatusUnauthorized, r.status, name)
		assert.Equal(t, ProblemUnauthorized, r.problemType(), name)
		assert.Equal(t, "Bearer", r.header.Get("WWW-Authenticate"), name)
	}
	r := do(t, ts.Client(), ts.URL, admin("PUT", `{}`))
	assert.Equal(t, http.StatusMethodNotAllowed, r.status)
	assert.Equal(t, "DELETE, GET, HEAD, POST", r.header.Get("Allow"))
}

func TestAdminArmsReadsAndClearsFaults(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t, WithAdminToken(testAdminToken))
	assert.Equal(t, newFaultDocument(FaultState{}), decodeFaults(t, do(t, ts.Client(), ts.URL, admin("GET", ""))))

	armed := decodeFaults(t, do(t, ts.Client(), ts.URL, admin("POST",
		`{"fail_next":{"count":3,"status":502,"retry_after":"2s"},"lose_next":1,"reset_next":2,"handler_delay":"500ms"}`)))
	want := FaultState{
		FailNext:     FailNextState{Count: 3, Status: 502, RetryAfter: 2 * time.Second},
		LoseNext:     1,
		ResetNext:    2,
		HandlerDelay: 500 * time.Millisecond,
	}
	assert.Equal(t, newFaultDocument(want), armed)
	assert.Equal(t, want, s.Faults().Snapshot())
	assert.Equal(t, "2s", armed.FailNext.RetryAfter)

	// A partial document leaves the other faults as they are.
	partial := decodeFaults(t, do(t, ts.Client(), ts.URL, admin("POST", `{"lose_next":0}`)))
	assert.Equal(t, 0, partial.LoseNext)
	assert.Equal(t, 3, partial.FailNext.Count)

	cleared := decodeFaults(t, do(t, ts.Client(), ts.URL, admin("DELETE", "")))
	assert.Equal(t, newFaultDocument(FaultState{}), cleared)
	assert.Equal(t, FaultState{}, s.Faults().Snapshot())
}

func TestAdminFaultsApplyToGuardedRequests(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t, WithAdminToken(testAdminToken))
	post := func(body string) { decodeFaults(t, do(t, ts.Client(), ts.URL, admin("POST", body))) }

	post(`{"fail_next":{"count":1}}`)
	failed := do(t, ts.Client(), ts.URL, pay("alice", "k1"))
	assert.Equal(t, DefaultFailStatus, failed.status)
	assert.Equal(t, ProblemInjectedFault, failed.problemType())

	post(`{"reset_next":1}`)
	_, err := freshClient().Do(pay("alice", "k1").request(t, ts.URL))
	require.Error(t, err)
	assert.Equal(t, 0, paymentCount(t, s))

	post(`{"lose_next":1}`)
	_, err = freshClient().Do(pay("alice", "k1").request(t, ts.URL))
	require.Error(t, err)
	assert.Equal(t, 1, paymentCount(t, s))

	replay := do(t, ts.Client(), ts.URL, pay("alice", "k1"))
	assert.Equal(t, http.StatusCreated, replay.status)
	assert.Equal(t, "true", replay.header.Get("Idempotent-Replayed"))

	post(`{"handler_delay":"1ms"}`)
	assert.Equal(t, time.Millisecond, s.Faults().Snapshot().HandlerDelay)
	assert.Equal(t, http.StatusCreated, do(t, ts.Client(), ts.URL, pay("alice", "k2")).status)
	assert.Equal(t, 5, s.GuardedRequests())
}

func TestAdminRejectsBadInput(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		body   string
		ct     string
		status int
		detail string
	}{
		"not JSON":              {body: `fail`, status: 400},
		"trailing data":         {body: `{} {}`, status: 400},
		"wrong content type":    {body: `{}`, ct: "text/plain", status: 415},
		"unknown field":         {body: `{"fail_everything":1}`, status: 400, detail: "fail_everything"},
		"negative count":        {body: `{"lose_next":-1}`, status: 400, detail: "lose_next"},
		"float count":           {body: `{"reset_next":1.5}`, status: 400, detail: "reset_next"},
		"string count":          {body: `{"reset_next":"1"}`, status: 400, detail: "reset_next"},
		"huge count":            {body: `{"lose_next":10000000}`, status: 400, detail: "lose_next"},
		"fail_next not object":  {body: `{"fail_next":3}`, status: 400, detail: "fail_next"},
		"fail_next no count":    {body: `{"fail_next":{"status":503}}`, status: 400, detail: "fail_next.count"},
		"fail_next 2xx":         {body: `{"fail_next":{"count":1,"status":200}}`, status: 400, detail: "fail_next.status"},
		"fail_next unknown":     {body: `{"fail_next":{"count":1,"code":500}}`, status: 400, detail: "code"},
		"bad retry_after":       {body: `{"fail_next":{"count":1,"retry_after":"soon"}}`, status: 400, detail: "retry_after"},
		"numeric retry_after":   {body: `{"fail_next":{"count":1,"retry_after":2}}`, status: 400, detail: "retry_after"},
		"negative delay":        {body: `{"handler_delay":"-1s"}`, status: 400, detail: "handler_delay"},
		"bad with good is none": {body: `{"lose_next":1,"reset_next":-1}`, status: 400, detail: "reset_next"},
		"too large":             {body: `{"lose_next":1,"x":"` + strings.Repeat("x", maxAdminBody) + `"}`, status: 413},
		"negative crash":        {body: `{"crash_after_commit":-1}`, status: 400, detail: "crash_after_commit"},
		"crash without a hook":  {body: `{"lose_next":1,"crash_after_commit":1}`, status: 400, detail: "no crash hook"},
	}
	s, ts := startServer(t, WithAdminToken(testAdminToken))
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := admin("POST", tc.body)
			c.contentType = tc.ct
			r := do(t, ts.Client(), ts.URL, c)
			require.Equal(t, tc.status, r.status, "body: %s", r.body)
			assert.Contains(t, r.problem(t).Detail, tc.detail)
		})
	}
	assert.Equal(t, FaultState{}, s.Faults().Snapshot(), "a rejected document arms nothing")
}

func TestAdminArmsCrashAfterCommitWithTheHook(t *testing.T) {
	t.Parallel()
	var crashes, paymentsAtCrash atomic.Int64
	var s *Server
	s, ts := startServer(t, WithAdminToken(testAdminToken), WithCrashHook(func() {
		crashes.Add(1)
		paymentsAtCrash.Store(int64(paymentCount(t, s)))
	}))

	armed := decodeFaults(t, do(t, ts.Client(), ts.URL, admin("POST", `{"crash_after_commit":2}`)))
	assert.Equal(t, 2, armed.CrashAfterCommit)
	assert.Equal(t, 2, s.Faults().Snapshot().CrashAfterCommit)

	_, err := freshClient().Do(pay("alice", "k1").request(t, ts.URL))
	require.Error(t, err, "no answer is written after the crash")
	assert.Equal(t, int64(1), crashes.Load(), "the server's hook is what the fault calls")
	assert.Equal(t, int64(1), paymentsAtCrash.Load(), "the effect was committed before the crash")
	assert.Equal(t, 1, decodeFaults(t, do(t, ts.Client(), ts.URL, admin("GET", ""))).CrashAfterCommit)

	disarmed := decodeFaults(t, do(t, ts.Client(), ts.URL, admin("POST", `{"crash_after_commit":0}`)))
	assert.Zero(t, disarmed.CrashAfterCommit)
	assert.Equal(t, http.StatusCreated, do(t, ts.Client(), ts.URL, pay("alice", "k2")).status)
	assert.Equal(t, int64(1), crashes.Load())
}

// Without a crash hook the endpoint refuses to arm the crash rather than
// arm a lost response under its name, but still shows a crash armed from
// Go and lets it be disarmed.
func TestAdminRefusesCrashAfterCommitWithoutAHook(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t, WithAdminToken(testAdminToken))

	r := do(t, ts.Client(), ts.URL, admin("POST", `{"crash_after_commit":1}`))
	require.Equal(t, http.StatusBadRequest, r.status, "body: %s", r.body)
	assert.Equal(t, ProblemInvalidRequest, r.problemType())
	assert.Contains(t, r.problem(t).Detail, "no crash hook")
	assert.Zero(t, s.Faults().Snapshot().CrashAfterCommit)

	s.Faults().CrashAfterCommit(3, nil)
	assert.Equal(t, 3, decodeFaults(t, do(t, ts.Client(), ts.URL, admin("GET", ""))).CrashAfterCommit)
	disarmed := decodeFaults(t, do(t, ts.Client(), ts.URL, admin("POST", `{"crash_after_commit":0}`)))
	assert.Zero(t, disarmed.CrashAfterCommit)
	assert.Zero(t, s.Faults().Snapshot().CrashAfterCommit)
}
