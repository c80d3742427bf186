package bench

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/idemkit/idem"
)

// StormCall makes one caller's call to url through a shared client and
// reports whether it ended in success. It must return once the call has
// ended, whatever the outcome.
type StormCall func(ctx context.Context, url string) bool

// StormContender is one retry strategy of the storm. New builds the ONE
// client that all the callers of a run share, over rt.
type StormContender struct {
	// Name labels the contender's row.
	Name string
	// Jittered marks the comparison strategies that jitter: the fastest
	// of them that failed no caller is the reference of the makespan
	// target. idem's own contenders are measured against them, not
	// against each other, so they are not marked.
	Jittered bool
	// New returns the call of a fresh client over rt, and its close.
	New func(rt http.RoundTripper) (StormCall, func(), error)
}

// stormAttempts is every contender's attempts per call but go-retryablehttp's
// own default (RetryMax 4), which is the same.
const stormAttempts = idem.DefaultMaxAttempts

const stormBody = `{"amount":1000,"currency":"EUR"}`

// StormContenders are the strategies the storm compares, each with the
// default bounds of its library.
func StormContenders() []StormContender {
	base, ceiling := idem.DefaultBackoffBase, idem.DefaultBackoffCap
	return []StormContender{
		loopContender("full jitter, no budget", true, func() idem.Backoff { return idem.FullJitter(base, ceiling, rand.Float64) }, nil),
		loopContender("decorrelated jitter, no budget", true, func() idem.Backoff { return idem.DecorrelatedJitter(base, ceiling, rand.Float64) }, nil),
		loopContender("exponential, no jitter", false, func() idem.Backoff { return idem.Exponential(base, ceiling) }, nil),
		retryablehttpContender(),
		loopContender("AWS retry quota (500, cost 5), full jitter", true, func() idem.Backoff { return idem.FullJitter(base, ceiling, rand.Float64) }, newAWSQuota),
		IdemContender("idem fixed bucket (100, 0.1), Begin/Do", false, func() []idem.Option {
			return []idem.Option{idem.WithBudget(idem.NewBudget(idem.DefaultBudgetCapacity, idem.DefaultBudgetRetryCost, idem.DefaultBudgetSuccessRefill))}
		}),
		IdemContender("idem default (adaptive), Begin/Do", false, nil),
		IdemContender("idem default (adaptive), Transport", true, nil),
	}
}

// IdemContender is one idem Client over rt with the options opts returns
// (nil: the defaults), built afresh for every run so that no budget is
// carried over; through its Transport when transport, else by Begin and
// Do.
func IdemContender(name string, transport bool, opts func() []idem.Option) StormContender {
	return StormContender{Name: name, New: func(rt http.RoundTripper) (StormCall, func(), error) {
		o := []idem.Option{idem.WithBaseTransport(rt)}
		if opts != nil {
			o = append(o, opts()...)
		}
		c, err := idem.New(o...)
		if err != nil {
			return nil, nil, err
		}
		closeFn := func() { _ = c.Close() }
		if transport {
			hc := &http.Client{Transport: c.Transport()}
			return func(ctx context.Context, url string) bool {
				return postOK(ctx, hc, url)
			}, closeFn, nil
		}
		return func(ctx context.Context, url string) bool {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(stormBody)))
			if err != nil {
				return false
			}
			req.Header.Set("Content-Type", "application/json")
			in, err := c.Begin(ctx, "", req)
			if err != nil {
				return false
			}
			resp, err := c.Do(ctx, in)
			if resp != nil {
				resp.Body.Close()
			}
			return err == nil && resp != nil && resp.StatusCode/100 == 2
		}, closeFn, nil
	}}
}

// postOK sends one POST of the storm's body through hc.
func postOK(ctx context.Context, hc *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(stormBody)))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode/100 == 2
}

// retryablehttpContender is go-retryablehttp's NewClient with its defaults
// (RetryMax 4, waits 1–30 s by DefaultBackoff, which honours Retry-After).
func retryablehttpContender() StormContender {
	return StormContender{Name: "go-retryablehttp defaults", New: func(rt http.RoundTripper) (StormCall, func(), error) {
		rc := retryablehttp.NewClient()
		rc.Logger = nil
		rc.HTTPClient = &http.Client{Transport: rt}
		hc := rc.StandardClient()
		return func(ctx context.Context, url string) bool { return postOK(ctx, hc, url) }, func() {}, nil
	}}
}

// retryQuota is a client-wide budget of a hand-written retry loop.
type retryQuota interface {
	// retry withdraws the cost of a retry, or reports false.
	retry() bool
	// success records a success; retried tells whether it was a retry.
	success(retried bool)
}

// awsQuota is the AWS SDKs' standard retry quota: 500 tokens, 5 per
// retry, given back when that retry succeeds, 1 per success on a first
// attempt.
type awsQuota struct {
	mu     sync.Mutex
	tokens int
}

func newAWSQuota() retryQuota { return &awsQuota{tokens: 500} }

func (q *awsQuota) retry() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.tokens < 5 {
		return false
	}
	q.tokens -= 5
	return true
}

func (q *awsQuota) success(retried bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if retried {
		q.tokens = min(q.tokens+5, 500)
	} else {
		q.tokens = min(q.tokens+1, 500)
	}
}

// loopContender is a plain retry loop over one shared http.Client: up to
// stormAttempts attempts, waits from a Backoff of its own per call (added
// on top of any Retry-After, as idem does), a client-wide quota if
// newQuota is not nil.
func loopContender(name string, jittered bool, newBackoff func() idem.Backoff, newQuota func() retryQuota) StormContender {
	return StormContender{Name: name, Jittered: jittered, New: func(rt http.RoundTripper) (StormCall, func(), error) {
		hc := &http.Client{Transport: rt}
		var quota retryQuota
		if newQuota != nil {
			quota = newQuota()
		}
		return func(ctx context.Context, url string) bool {
			b := newBackoff()
			for n := 0; n < stormAttempts; n++ {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(stormBody)))
				if err != nil {
					return false
				}
				req.Header.Set("Content-Type", "application/json")
				resp, err := hc.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode/100 == 2 {
						if quota != nil {
							quota.success(n > 0)
						}
						return true
					}
				}
				if n == stormAttempts-1 || (quota != nil && !quota.retry()) {
					return false
				}
				var hint time.Duration
				var ok bool
				if err == nil {
					hint, ok = idem.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
				}
				t := time.NewTimer(idem.RetryWait(b, n, min(hint, idem.DefaultRetryAfterCeiling), ok))
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					return false
				}
			}
			return false
		}, func() {}, nil
	}}
}
