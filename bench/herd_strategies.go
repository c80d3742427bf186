package bench

import (
	"net/http"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/idemkit/idem"
)

// Waiter is one client's retry policy: the wait before retry n (0 for the
// first retry) after the rejected response resp, learned at now.
type Waiter func(n int, resp *http.Response, now time.Time) time.Duration

// Strategy names a retry policy and builds it for each client; rnd is the
// client's own uniform source in [0, 1).
type Strategy struct {
	Name      string
	NewClient func(rnd func() float64) Waiter
}

// go-retryablehttp's defaults (RetryWaitMin, RetryWaitMax), which its
// NewClient sets and its users get.
const (
	retryablehttpWaitMin = 1 * time.Second
	retryablehttpWaitMax = 30 * time.Second
)

// HerdStrategies are the policies of the herd table: idem's backoffs with
// idem's default bounds, and go-retryablehttp's with its own defaults.
func HerdStrategies() []Strategy {
	base, ceiling := idem.DefaultBackoffBase, idem.DefaultBackoffCap
	return []Strategy{
		idemStrategy("idem FullJitter (default)", func(rnd func() float64) idem.Backoff {
			return idem.FullJitter(base, ceiling, rnd)
		}),
		idemStrategy("exponential, no jitter", func(func() float64) idem.Backoff {
			return idem.Exponential(base, ceiling)
		}),
		idemStrategy("EqualJitter", func(rnd func() float64) idem.Backoff {
			return idem.EqualJitter(base, ceiling, rnd)
		}),
		idemStrategy("DecorrelatedJitter", func(rnd func() float64) idem.Backoff {
			return idem.DecorrelatedJitter(base, ceiling, rnd)
		}),
		retryablehttpStrategy("retryablehttp DefaultBackoff", retryablehttp.DefaultBackoff),
		retryablehttpStrategy("retryablehttp LinearJitterBackoff", retryablehttp.LinearJitterBackoff),
	}
}

// idemStrategy waits exactly as idem's retry loop does (idem.RetryWait):
// the backoff's draw, added on top of the server's Retry-After (capped at
// the default ceiling) when there is one.
func idemStrategy(name string, newBackoff func(rnd func() float64) idem.Backoff) Strategy {
	return Strategy{Name: name, NewClient: func(rnd func() float64) Waiter {
		b := newBackoff(rnd)
		return func(n int, resp *http.Response, now time.Time) time.Duration {
			hint, ok := idem.ParseRetryAfter(resp.Header.Get("Retry-After"), now)
			return idem.RetryWait(b, n, min(hint, idem.DefaultRetryAfterCeiling), ok)
		}
	}}
}

// retryablehttpStrategy calls go-retryablehttp's Backoff exactly as its
// retry loop does: Backoff(RetryWaitMin, RetryWaitMax, attempt, resp).
func retryablehttpStrategy(name string, b retryablehttp.Backoff) Strategy {
	return Strategy{Name: name, NewClient: func(func() float64) Waiter {
		return func(n int, resp *http.Response, _ time.Time) time.Duration {
			return b(retryablehttpWaitMin, retryablehttpWaitMax, n, resp)
		}
	}}
}
