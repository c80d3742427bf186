package idemtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// inProgressRounds bounds how many fresh keys the in-progress probe tries
// before giving up on seeing a request still executing.
const inProgressRounds = 3

// checkConcurrent sends Concurrency duplicates at once and counts the
// distinct resources the 2xx answers describe: exactly one may exist.
func (r *conformanceRun) checkConcurrent(ctx context.Context) verdict {
	if !r.firstOK {
		return noFirst()
	}
	release := r.hold(ctx)
	defer release()

	o := outgoing{what: "concurrent duplicate", keys: []string{newKey()}, body: r.body()}
	r.warmUp(ctx, r.cfg.concurrency)
	answers, errs := r.burst(ctx, o, r.cfg.concurrency)
	if len(errs) > 0 {
		return fail("%d of %d duplicates got no answer: %v", len(errs), r.cfg.concurrency, errs[0])
	}
	// A final request after the burst learns the outcome even when every
	// duplicate was answered 409.
	o.what = "request after the duplicates"
	final, err := r.settle(ctx, o)
	if err != nil {
		return fail("%v", err)
	}
	answers = append(answers, final)

	ids := map[string]bool{}
	var created, replayed, conflicted int
	var unexpected []string
	for _, e := range answers {
		switch {
		case e.success():
			ids[r.cfg.resourceID(e.body)] = true
			if e.replayed() {
				replayed++
			} else {
				created++
			}
		case e.status == http.StatusConflict:
			conflicted++
			r.conflicts = append(r.conflicts, e)
		default:
			r.noteProblem(e)
			unexpected = append(unexpected, e.summary())
		}
	}
	tally := fmt.Sprintf("%d duplicates and one follow-up: %d fresh 2xx, %d replayed, %d got 409",
		r.cfg.concurrency, created, replayed, conflicted)
	switch {
	case len(unexpected) > 0:
		return fail("%s; unexpected answers: %s", tally, joinDefects(unexpected))
	case len(ids) != 1:
		return fail("%d distinct resources created for one key (%s): %s", len(ids), sortedKeys(ids), tally)
	}
	return pass("one resource: %s", tally)
}

// warmUp opens up to n connections with concurrent OPTIONS requests (safe
// by definition, whatever the server answers), so that the duplicates of
// the burst do not wait for dials and TLS handshakes and really overlap.
func (r *conformanceRun) warmUp(ctx context.Context, n int) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodOptions, r.cfg.url, nil)
			if err != nil {
				return
			}
			resp, err := r.cfg.client.Do(req)
			if err != nil {
				return
			}
			// Drain so the connection goes back to the pool.
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxConformanceBody))
			_ = resp.Body.Close()
		})
	}
	wg.Wait()
}

// burst sends n copies of o at the same instant and returns the answers
// and the transport errors.
func (r *conformanceRun) burst(ctx context.Context, o outgoing, n int) ([]exchange, []error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		answers []exchange
		errs    []error
	)
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			e, err := r.post(ctx, o)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			answers = append(answers, e)
		})
	}
	close(start)
	wg.Wait()
	return answers, errs
}

// checkInProgress judges every 409 seen: each must be an /in-progress
// problem with a usable Retry-After. When none was seen and the server can
// be slowed, it provokes one first.
func (r *conformanceRun) checkInProgress(ctx context.Context) verdict {
	canSlow := r.cfg.hold != nil || r.cfg.slowHeader != nil
	if len(r.conflicts) == 0 && r.firstOK && canSlow {
		if err := r.provokeInProgress(ctx); err != nil {
			return fail("%v", err)
		}
	}
	switch {
	case r.holdErr != nil:
		return fail("the Hold hook could not slow the server: %v", r.holdErr)
	case len(r.conflicts) > 0:
	case !r.firstOK:
		return noFirst()
	case canSlow:
		return fail("a duplicate of a request held on the server was never answered 409")
	default:
		return skip("no duplicate arrived while its original was executing; give a way to slow the server to force one")
	}
	var failures []string
	for _, e := range r.conflicts {
		if msg := e.expectProblem(http.StatusConflict, "in-progress"); msg != "" {
			failures = append(failures, msg)
		}
		if !e.retryAfterValid() {
			failures = append(failures, fmt.Sprintf("%s: 409 without a valid Retry-After (got %q)", e.what, e.header.Get("Retry-After")))
		}
	}
	if len(failures) > 0 {
		return fail("%s", joinDefects(failures))
	}
	return pass("%d answers 409 /in-progress, each with Retry-After", len(r.conflicts))
}

// provokeInProgress sends an original (slowed by SlowHeader or Hold) and
// duplicates of it until one of the two sides is answered 409.
func (r *conformanceRun) provokeInProgress(ctx context.Context) error {
	release := r.hold(ctx)
	defer release()
	for range inProgressRounds {
		key, body := newKey(), r.body()
		original := outgoing{what: "original held in progress", keys: []string{key}, body: body, override: r.cfg.slowHeader}
		// The duplicate carries the slow header too: whichever of the two
		// the server reserves first is held, so the other one meets it in
		// progress even when it overtakes the original on the way.
		duplicate := outgoing{what: "duplicate while in progress", keys: []string{key}, body: body, override: r.cfg.slowHeader}

		type answer struct {
			e   exchange
			err error
		}
		done := make(chan answer, 1)
		go func() {
			e, err := r.post(ctx, original)
			done <- answer{e, err}
		}()
		var got *answer
		for got == nil {
			dup, err := r.post(ctx, duplicate)
			if err != nil {
				<-done
				return err
			}
			if dup.status == http.StatusConflict {
				r.conflicts = append(r.conflicts, dup)
				break
			}
			select {
			case a := <-done:
				got = &a
			case <-time.After(10 * time.Millisecond):
			}
		}
		if got == nil {
			a := <-done
			got = &a
		}
		if got.err != nil {
			return got.err
		}
		if got.e.status == http.StatusConflict {
			r.conflicts = append(r.conflicts, got.e)
		}
		if len(r.conflicts) > 0 {
			return nil
		}
	}
	return nil
}

// sortedKeys lists a set's members in order, for a stable detail.
func sortedKeys(set map[string]bool) string {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > 5 {
		keys = append(keys[:5], "…")
	}
	return strings.Join(keys, ", ")
}
