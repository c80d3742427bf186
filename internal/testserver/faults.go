package testserver

import (
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Faults injects failures into guarded requests (POST and PATCH on the
// routes the idempotency layer guards), so clients can prove they survive
// them. The zero value injects nothing; every method is safe for
// concurrent use.
//
// When several one-shot faults are armed, a request consumes exactly one,
// in this order: reset, fail, lose, crash.
type Faults struct {
	mu             sync.Mutex
	failCount      int
	failStatus     int
	failRetryAfter time.Duration
	loseCount      int
	resetCount     int
	handlerDelay   time.Duration
	crashCount     int
	crash          func()
	// holding counts the requests inside the layer now: key reserved,
	// handler (and its delay) running.
	holding atomic.Int64
}

// Holding returns how many guarded requests hold their key right now:
// reserved, their handler (or its injected delay) still running.
func (f *Faults) Holding() int { return int(f.holding.Load()) }

// FaultState is what Faults has armed.
type FaultState struct {
	FailNext     FailNextState
	LoseNext     int
	ResetNext    int
	HandlerDelay time.Duration
	// CrashAfterCommit counts the requests still to be followed by a
	// crash (see Faults.CrashAfterCommit).
	CrashAfterCommit int
}

// FailNextState describes the FailNext fault.
type FailNextState struct {
	Count      int
	Status     int
	RetryAfter time.Duration
}

// DefaultFailStatus is the status FailNext uses in place of one outside
// 400–599.
const DefaultFailStatus = http.StatusServiceUnavailable

// FailNext answers the next n guarded requests with status (an
// application/problem+json /injected-fault, with Retry-After when
// retryAfter > 0) before the idempotency layer sees them: no effect is
// made and nothing is stored. A status outside 400–599 is replaced by
// DefaultFailStatus; n <= 0 disarms the fault.
func (f *Faults) FailNext(n int, status int, retryAfter time.Duration) {
	if status < 400 || status > 599 {
		status = DefaultFailStatus
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failCount = max(n, 0)
	f.failStatus = status
	f.failRetryAfter = max(retryAfter, 0)
}

// LoseNextResponses lets the next n guarded requests run fully (the effect
// is made and the key completed), then closes the connection without
// sending the response: the client cannot know the outcome. n <= 0
// disarms the fault.
func (f *Faults) LoseNextResponses(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.loseCount = max(n, 0)
}

// ResetNext resets the connection (TCP RST, SO_LINGER 0) of the next n
// guarded requests before they execute: no effect is made. n <= 0 disarms
// the fault.
func (f *Faults) ResetNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resetCount = max(n, 0)
}

// SetHandlerDelay makes guarded handlers wait d after their key is
// reserved, so concurrent duplicates see 409 /in-progress. 0 turns the
// delay off.
func (f *Faults) SetHandlerDelay(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlerDelay = max(d, 0)
}

// CrashAfterCommit lets the next n guarded requests run fully (the effect
// and the key's completion are committed), then calls crash before any
// byte of the response is written. It models a server process dying
// between its commit and its answer: the command-line server passes a
// function that kills its own process. A nil crash, or a request that
// crash returns from, drops the connection without an answer, like
// LoseNextResponses; the library itself never ends the process. n <= 0
// disarms the fault.
func (f *Faults) CrashAfterCommit(n int, crash func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crashCount = max(n, 0)
	f.crash = crash
}

// Clear disarms every fault.
func (f *Faults) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failCount, f.failStatus, f.failRetryAfter = 0, 0, 0
	f.loseCount, f.resetCount, f.handlerDelay = 0, 0, 0
	f.crashCount, f.crash = 0, nil
}

// Snapshot returns what is armed now.
func (f *Faults) Snapshot() FaultState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return FaultState{
		FailNext:     FailNextState{Count: f.failCount, Status: f.failStatus, RetryAfter: f.failRetryAfter},
		LoseNext:     f.loseCount,
		ResetNext:    f.resetCount,
		HandlerDelay: f.handlerDelay,

		CrashAfterCommit: f.crashCount,
	}
}

// faultKind is the one-shot fault a request consumed.
type faultKind int

const (
	faultNone faultKind = iota
	faultReset
	faultFail
	faultLose
	faultCrash
)

// take consumes the one-shot fault for the request now arriving. For a
// crash, the crash function comes back through takeCrash.
func (f *Faults) take() (kind faultKind, status int, retryAfter time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.resetCount > 0:
		f.resetCount--
		return faultReset, 0, 0
	case f.failCount > 0:
		f.failCount--
		return faultFail, f.failStatus, f.failRetryAfter
	case f.loseCount > 0:
		f.loseCount--
		return faultLose, 0, 0
	case f.crashCount > 0:
		f.crashCount--
		return faultCrash, 0, 0
	}
	return faultNone, 0, 0
}

func (f *Faults) crashFunc() func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.crash
}

func (f *Faults) delay() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.handlerDelay
}

// outside wraps the idempotency layer of a guarded route with the
// one-shot faults. Fail and reset act before the layer, so nothing is
// reserved; lose and crash act after it, so the key is completed before
// the response is dropped or the process dies.
func (f *Faults) outside(next http.Handler, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind, status, retryAfter := f.take()
		switch kind {
		case faultReset:
			logger.Info("injected fault: connection reset", "method", r.Method, "path", r.URL.Path)
			abortConnection(w, true)
		case faultFail:
			logger.Info("injected fault: failure", "method", r.Method, "path", r.URL.Path, "status", status)
			WriteProblem(w, status, ProblemInjectedFault, "Injected fault",
				"the server was told to fail this request; nothing was executed", retryAfter)
		case faultLose:
			next.ServeHTTP(newDiscardWriter(), r)
			logger.Info("injected fault: response lost", "method", r.Method, "path", r.URL.Path)
			abortConnection(w, false)
		case faultCrash:
			next.ServeHTTP(newDiscardWriter(), r)
			logger.Warn("injected fault: crash after commit", "method", r.Method, "path", r.URL.Path)
			if crash := f.crashFunc(); crash != nil {
				crash()
			}
			abortConnection(w, false)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// inside runs within the idempotency layer, after the key is reserved, and
// applies the handler delay. A request whose context ends during the delay
// answers 503 without executing, which releases its key.
func (f *Faults) inside(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.holding.Add(1)
		defer f.holding.Add(-1)
		if d := f.delay(); d > 0 {
			timer := time.NewTimer(d)
			defer timer.Stop()
			select {
			case <-timer.C:
			case <-r.Context().Done():
				WriteProblem(w, http.StatusServiceUnavailable, ProblemInjectedFault, "Injected fault",
					"the request ended during the injected handler delay; nothing was executed", storeRetryAfter)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// abortConnection closes the client connection without a response. With
// reset, SO_LINGER 0 makes the close send a TCP RST instead of a FIN.
// When the connection cannot be hijacked (HTTP/2), the handler aborts
// with http.ErrAbortHandler, which resets the stream.
func abortConnection(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp := tcpConn(conn); reset && tcp != nil {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

// tcpConn returns the TCP connection under conn, if there is one.
func tcpConn(conn net.Conn) *net.TCPConn {
	switch c := conn.(type) {
	case *net.TCPConn:
		return c
	case *tls.Conn:
		tcp, _ := c.NetConn().(*net.TCPConn)
		return tcp
	}
	return nil
}

// discardWriter is a ResponseWriter that drops the response, for lost
// responses.
type discardWriter struct {
	header http.Header
}

func newDiscardWriter() *discardWriter { return &discardWriter{header: make(http.Header)} }

func (d *discardWriter) Header() http.Header         { return d.header }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
