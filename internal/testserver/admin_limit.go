package testserver

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// ProblemTooManyRequests is the problem type of an admin call refused
// because its address guessed wrong tokens too often.
const ProblemTooManyRequests = "too-many-requests"

// Failed admin authentications allowed per remote address: a burst of
// adminFailBurst, refilled at adminFailRate a second. An operator who
// mistypes the token is barely slowed; a guesser gets a few tries a second.
const (
	adminFailBurst = 5
	adminFailRate  = 5
	// adminFailHosts bounds the table, so a flood of addresses cannot grow it.
	adminFailHosts = 4096
)

// failLimiter counts failed token guesses per remote host, as token
// buckets that only failures drain.
type failLimiter struct {
	mu      sync.Mutex
	now     func() time.Time
	buckets map[string]*failBucket
}

type failBucket struct {
	tokens float64
	at     time.Time
}

func newFailLimiter(now func() time.Time) *failLimiter {
	return &failLimiter{now: now, buckets: make(map[string]*failBucket)}
}

// remoteHost is the host part of r.RemoteAddr: every port of one client
// shares its budget.
func remoteHost(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// refill brings b up to date and returns it; the caller holds mu.
func (l *failLimiter) bucket(host string) *failBucket {
	now := l.now()
	b, ok := l.buckets[host]
	if !ok {
		if len(l.buckets) >= adminFailHosts {
			l.prune(now)
		}
		b = &failBucket{tokens: adminFailBurst, at: now}
		l.buckets[host] = b
	}
	b.tokens = min(adminFailBurst, b.tokens+now.Sub(b.at).Seconds()*adminFailRate)
	b.at = now
	return b
}

// prune drops buckets that are full again (they hold no memory of
// failures); if none is, it drops them all rather than grow.
func (l *failLimiter) prune(now time.Time) {
	for host, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*adminFailRate >= adminFailBurst {
			delete(l.buckets, host)
		}
	}
	if len(l.buckets) >= adminFailHosts {
		clear(l.buckets)
	}
}

// blocked reports whether host has no failures left, and when the next
// one is allowed.
func (l *failLimiter) blocked(host string) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(host)
	if b.tokens >= 1 {
		return 0, false
	}
	return time.Duration((1 - b.tokens) / adminFailRate * float64(time.Second)), true
}

// fail spends one of host's failures.
func (l *failLimiter) fail(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.bucket(host)
	b.tokens = max(0, b.tokens-1)
}
