package idemtest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// inProgressRounds bounds how many fresh keys the in-progress probe tries
// before giving up on seeing a request still executing.
const inProgressRounds = 3

// burstTally is what the bursts of the concurrency check saw.
type burstTally struct {
	bursts, multi int // bursts run; bursts with more than one effect
	worst         int // most effects of one burst
	worstIDs      string
	ok, refused   int
	unexpected    []string
	// held counts bursts whose duplicates were all answered with the
	// original's result after waiting as long as it ran (lock-and-wait):
	// heldSlowed among the bursts the Hold hook slowed, heldFree among
	// the freeBursts that ran at the server's own speed.
	heldSlowed, heldFree, freeBursts int
}

// lockAndWait reports whether the bursts show a server that holds
// duplicates until their original finishes: a burst slowed by the Hold
// hook, whose original is known to run long, had every duplicate answered
// with its result, together, as late as it finished, and none refused.
// A host that stalled that burst would look the same, so the in-progress
// check still asks its own probe before it fails anything.
func (t burstTally) lockAndWait() bool {
	return t.refused == 0 && t.heldSlowed > 0
}

// lockAndWaitHint reports whether the answer times of bursts at the
// server's own speed look like lock-and-wait in most of them. Timing alone
// proves nothing (a loaded host that stalls a burst makes its answers
// arrive late and together just the same), so this is never a verdict.
func (t burstTally) lockAndWaitHint() bool {
	return t.refused == 0 && t.heldFree > 0 && 2*t.heldFree > t.freeBursts
}

// checkConcurrent sends Bursts bursts of Concurrency duplicates, each over
// a fresh key, and counts each burst's effects: the distinct resources its
// 2xx answers describe and the new entries of the list. One burst in
// which more than one effect appeared fails the check.
func (r *conformanceRun) checkConcurrent(ctx context.Context) verdict {
	if !r.firstOK {
		return noFirst()
	}
	// Only the first burst is held: one slow original is enough to see
	// how duplicates are met; the others run at the server's own speed,
	// where a check-then-insert race hides.
	var t burstTally
	for i := range r.cfg.bursts {
		release := func() {}
		if i == 0 {
			release = r.hold(ctx)
			r.holding = r.cfg.hold != nil
		}
		err := r.oneBurst(ctx, &t)
		r.holding = false
		release()
		if err != nil {
			return fail("%v", err)
		}
	}
	r.lockWait, r.lockWaitHint = t.lockAndWait(), t.lockAndWaitHint()
	tally := fmt.Sprintf("%d bursts of %d duplicates: %d answered 2xx, %d refused in progress",
		t.bursts, r.cfg.concurrency, t.ok, t.refused)
	switch {
	case t.multi > 0:
		return fail("%d of %d bursts made more than one effect (up to %d for one key: %s); %s",
			t.multi, t.bursts, t.worst, t.worstIDs, tally)
	case len(t.unexpected) > 0:
		return fail("%s; unexpected answers: %s", tally, joinDefects(t.unexpected))
	case r.lockWait:
		return pass("one effect per key; %s; duplicates waited for the original (lock-and-wait)", tally)
	case r.lockWaitHint:
		return pass("one effect per key; %s; the answer times suggest duplicates waited for the original", tally)
	}
	return pass("one effect per key; %s", tally)
}

// oneBurst sends one burst and a follow-up that learns the outcome even
// when every duplicate was refused, and adds what it saw to t.
func (r *conformanceRun) oneBurst(ctx context.Context, t *burstTally) error {
	o := outgoing{what: "concurrent duplicate", keys: []string{r.newKey()}, body: r.body()}
	before := r.countBefore(ctx, nil)
	answers, errs := r.burst(ctx, o, r.cfg.concurrency)
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d duplicates got no answer: %v", len(errs), r.cfg.concurrency, errs[0])
	}
	o.what = "request after the duplicates"
	final, err := r.settle(ctx, o)
	if err != nil {
		return err
	}
	made, counted := r.created(ctx, before, nil)

	ids := map[string]bool{}
	if final.success() {
		ids[r.cfg.resourceID(final.body)] = true
	}
	refused := 0
	for _, e := range answers {
		switch {
		case e.success():
			ids[r.cfg.resourceID(e.body)] = true
			t.ok++
		case r.inProgress(e):
			refused++
			r.conflicts = append(r.conflicts, e)
		default:
			r.noteProblem(e)
			t.unexpected = append(t.unexpected, e.summary())
		}
	}
	t.refused += refused
	t.bursts++
	effects := len(ids)
	if counted && made > effects {
		effects = made
	}
	if effects > 1 {
		t.multi++
		if effects > t.worst {
			t.worst, t.worstIDs = effects, sortedKeys(ids)
		}
	}
	held := refused == 0 && effects == 1 && r.heldOnLock(answers)
	switch {
	case r.holding && held:
		t.heldSlowed++
	case !r.holding:
		t.freeBursts++
		if held {
			t.heldFree++
		}
	}
	return nil
}

// Least time the fastest answer of a burst must take for its duplicates
// to count as held: below it, the original may have finished before they
// were looked at. A held burst (Hold) is known to execute slowly; an
// unheld one must stand out from the quickest answer of the run.
const (
	lockFloorHeld   = 20 * time.Millisecond
	lockFloorUnheld = 100 * time.Millisecond
)

// heldOnLock reports whether the answers of a burst (all 2xx, one
// effect) show duplicates waiting for their original: every answer took
// as long as an execution, and all came back together, at the end of the
// same wait, rather than spread over the burst as a busy server's are.
func (r *conformanceRun) heldOnLock(answers []exchange) bool {
	if len(answers) < 2 {
		return false
	}
	fastest := answers[0].took()
	first, last := answers[0].answered, answers[0].answered
	for _, e := range answers[1:] {
		fastest = min(fastest, e.took())
		if e.answered.Before(first) {
			first = e.answered
		}
		if e.answered.After(last) {
			last = e.answered
		}
	}
	r.quickestMu.Lock()
	quickest := r.quickest
	r.quickestMu.Unlock()
	floor := max(lockFloorUnheld, 10*quickest)
	if r.holding {
		floor = lockFloorHeld
	}
	return fastest >= floor && last.Sub(first) <= fastest/2
}

// burst sends n copies of o released together (see burstGate) and returns
// the answers and the transport errors.
func (r *conformanceRun) burst(ctx context.Context, o outgoing, n int) ([]exchange, []error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		answers []exchange
		errs    []error
	)
	gate := newBurstGate(n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := r.send(ctx, o, gate)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			if opened := gate.openedAt(); opened.After(e.sent) {
				e.sent = opened // time waiting at the gate is not the server's
			}
			answers = append(answers, e)
		}()
	}
	gate.release(ctx, n)
	wg.Wait()
	return answers, errs
}

// checkInProgress: a duplicate that arrives while its original executes
// should be refused (draft-07 §2.7: 409), not executed and not held. It
// fails only on proof: a duplicate of an original the server was made to
// hold was answered with the original's result after waiting for it.
// Whatever could not be provoked or proven is a skip, never a failure.
func (r *conformanceRun) checkInProgress(ctx context.Context) verdict {
	canSlow := r.cfg.hold != nil || r.cfg.slowHeader != nil
	if r.holdErr != nil && r.cfg.slowHeader == nil {
		canSlow = false // the hook failed in the bursts: nothing would be held
	}
	if len(r.conflicts) == 0 && r.firstOK && canSlow {
		if err := r.provokeInProgress(ctx); err != nil {
			return fail("%v", err)
		}
	}
	switch {
	case len(r.conflicts) > 0:
		return pass("%d duplicates refused while the original executed (%s)", len(r.conflicts), r.conflicts[0].summary())
	case !r.firstOK:
		return noFirst()
	case r.lockWaitProven:
		return fail("duplicates sent while the original executed were held until it finished and then given its answer " +
			"(lock-and-wait); none was refused in progress (409)")
	case r.holdErr != nil:
		return skip("the Hold hook could not slow the server, so no duplicate could be sent while its original ran: %v", r.holdErr)
	case canSlow:
		return skip("no duplicate was seen to meet its original still executing, though the server was asked to hold it " +
			"(is the slow header or admin token in effect?)")
	case r.lockWait || r.lockWaitHint:
		return skip("the answer times suggest duplicates wait for their original (lock-and-wait), which timing alone " +
			"cannot prove; give a way to slow the server (--slow-header, --admin-token) to judge")
	}
	r.quickestMu.Lock()
	quickest := r.quickest
	r.quickestMu.Unlock()
	return skip("no duplicate was seen to overlap its original (quickest answer %s): the handler is too fast to tell; "+
		"give a way to slow the server (--slow-header, --admin-token) to judge", quickest.Round(time.Microsecond))
}

// provokeInProgress sends an original (slowed by SlowHeader or Hold) and
// duplicates of it until one of the two sides is refused in progress. A
// duplicate answered with the original's result after waiting as long as
// the original ran proves lock-and-wait (r.lockWaitProven).
func (r *conformanceRun) provokeInProgress(ctx context.Context) error {
	release := r.hold(ctx)
	defer release()
	if r.holdErr != nil && r.cfg.slowHeader == nil {
		return nil // nothing is held: no duplicate can meet its original
	}
	for range inProgressRounds {
		key, body := r.newKey(), r.body()
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
		var dups []exchange
		for got == nil {
			dup, err := r.post(ctx, duplicate)
			if err != nil {
				<-done
				return err
			}
			if r.inProgress(dup) {
				r.conflicts = append(r.conflicts, dup)
				break
			}
			dups = append(dups, dup)
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
		if r.inProgress(got.e) {
			r.conflicts = append(r.conflicts, got.e)
		}
		if len(r.conflicts) > 0 {
			return nil
		}
		if r.waitedForOriginal(dups, got.e) {
			r.lockWaitProven = true
			return nil
		}
	}
	return nil
}

// minHeldRun is the least time an original must have taken, from the
// checker's side, for duplicates that waited on it to prove lock-and-wait:
// a hold that took effect (Hold and SlowHeader hold a request for 150 ms
// or more) rather than an ordinary answer slowed by a busy host.
const minHeldRun = 100 * time.Millisecond

// waitedForOriginal reports whether the original was seen held (it took
// at least minHeldRun and ten times the quickest answer of the run) and
// one of dups, sent in the first half of that run, got the original's
// result only at its end: it was held on the original, not answered from
// a finished record.
func (r *conformanceRun) waitedForOriginal(dups []exchange, original exchange) bool {
	r.quickestMu.Lock()
	quickest := r.quickest
	r.quickestMu.Unlock()
	run := original.took()
	if run < max(minHeldRun, 10*quickest) {
		return false
	}
	for _, d := range dups {
		if !d.success() || !r.cfg.repeats(d, original) {
			continue
		}
		early := d.sent.Sub(original.sent) <= run/2
		late := d.answered.Sub(original.sent) >= run*3/4
		if early && late {
			return true
		}
	}
	return false
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
