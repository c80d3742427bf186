package idemtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// conformanceRun holds what one RunConformance call learned so far: later
// checks build on earlier answers.
type conformanceRun struct {
	cfg      *conformanceConfig
	nextBody int

	// first is the answer to the first request, sent with firstKey and
	// firstBody; firstOK is true when it was a fresh 2xx.
	first     exchange
	firstKey  string
	firstBody []byte
	firstOK   bool
	// replayOK is true once a sequential replay has been seen to work;
	// checks that compare replays need it to be meaningful.
	replayOK bool

	// conflicts are the 409 answers seen in any check.
	conflicts []exchange
	// problems are the error answers that must be problem documents.
	problems []exchange
	// holdErr is the last error of the Hold hook.
	holdErr error
	// listErr is why the list endpoint could not be used, if it failed.
	listErr error
	// replays are the answers that should be replays of an earlier one;
	// fresh are first answers to fresh keys (for the replay-header check).
	replays, fresh []exchange
	// lockWait is set when a burst the Hold hook slowed had its
	// duplicates held until their original finished, none refused;
	// lockWaitHint when the answer times of unslowed bursts suggest it.
	// Neither fails a check: lockWaitProven, set by the in-progress probe
	// when a duplicate of a held original waited for it, does.
	lockWait, lockWaitHint, lockWaitProven bool
	// holding is true while a burst runs under the Hold hook.
	holding bool
	// quickest is the shortest answer time seen, a floor for telling a
	// held duplicate from a fast one.
	quickest   time.Duration
	quickestMu sync.Mutex
	// typed are the answers whose problem type the idem profile names.
	typed []typedAnswer
}

// verdict is the outcome of one check without its metadata.
type verdict struct {
	passed, skipped bool
	detail          string
}

func pass(format string, args ...any) verdict {
	return verdict{passed: true, detail: fmt.Sprintf(format, args...)}
}

func fail(format string, args ...any) verdict {
	return verdict{detail: fmt.Sprintf(format, args...)}
}

func skip(format string, args ...any) verdict {
	return verdict{skipped: true, detail: fmt.Sprintf(format, args...)}
}

// conformanceCheck is one entry of the check table.
type conformanceCheck struct {
	id, name string
	// level, ref, quote and note come from the check's source in the
	// run's dialect and profile (sourceFor).
	level, ref, quote, note string
	// applies reports whether the check belongs to the run's profile and
	// dialect; nil means always.
	applies func(*conformanceConfig) bool
	run     func(*conformanceRun, context.Context) verdict
}

// firstRequestCheck is the entry of the first request, which runAll runs
// itself: it doubles as the reachability probe.
func firstRequestCheck() conformanceCheck {
	return conformanceCheck{id: CheckFirstRequest, name: "first request succeeds"}
}

// conformanceChecks lists the checks after the first request, in the order
// they run. The order matters: earlier checks feed the answers that the
// problem and vocabulary checks judge. What each grades, and at which
// level, is in conformance_sources.go.
func conformanceChecks() []conformanceCheck {
	return []conformanceCheck{
		{id: CheckValidKeys, name: "1-, 36- and longest keys accepted", run: (*conformanceRun).checkValidKeys},
		{id: CheckReplay, name: "replay: same answer, no new resource", run: (*conformanceRun).checkReplay},
		{id: CheckKeyReuse, name: "same key, other body refused", applies: fingerprinting, run: (*conformanceRun).checkKeyReuse},
		{id: CheckMissingKey, name: "missing key refused", applies: requiresKey, run: (*conformanceRun).checkMissingKey},
		{id: CheckInvalidKey, name: "malformed keys refused", run: (*conformanceRun).checkInvalidKey},
		{id: CheckQuotedKey, name: "quoted key is the bare key", applies: draftOnly, run: (*conformanceRun).checkQuotedKey},
		{id: CheckConcurrent, name: "concurrent duplicates, one effect", run: (*conformanceRun).checkConcurrent},
		{id: CheckInProgress, name: "duplicate in progress refused", run: (*conformanceRun).checkInProgress},
		{id: CheckPrincipalScope, name: "keys scoped by principal", run: (*conformanceRun).checkPrincipalScope},
		{id: CheckErrorNotStored, name: "validation error leaves the key free", run: (*conformanceRun).checkErrorNotStored},
		{id: CheckProblemDetails, name: "errors are RFC 9457 problems", applies: draftOnly, run: (*conformanceRun).checkProblemDetails},
		{id: CheckReplayHeader, name: "replay marked Idempotent-Replayed", applies: idemProfile, run: (*conformanceRun).checkReplayHeader},
		{id: CheckProblemTypes, name: "problem types name the case", applies: idemProfile, run: (*conformanceRun).checkProblemTypes},
		{id: CheckRetryAfter, name: "409 carries Retry-After", applies: idemProfile, run: (*conformanceRun).checkRetryAfter},
		{id: CheckRequestTarget, name: "same key, other query or path refused", applies: idemProfile, run: (*conformanceRun).checkRequestTarget},
	}
}

func draftOnly(c *conformanceConfig) bool      { return c.isDraft() }
func fingerprinting(c *conformanceConfig) bool { return c.rules.fingerprints }
func requiresKey(c *conformanceConfig) bool    { return c.rules.requireKey }

// idemProfile: this project's vocabulary is graded only when asked for,
// and only in the draft dialect (a provider has its own).
func idemProfile(c *conformanceConfig) bool { return c.profile == ProfileIdem && c.isDraft() }

func newConformanceRun(baseURL string, opts ConformanceOptions) (*conformanceRun, error) {
	cfg, err := newConformanceConfig(baseURL, opts)
	if err != nil {
		return nil, err
	}
	return &conformanceRun{cfg: cfg}, nil
}

// runAll runs the first request, which doubles as the reachability probe,
// then every other check.
func (r *conformanceRun) runAll(ctx context.Context) ([]CheckResult, error) {
	first, err := r.checkFirstRequest(ctx)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // the URL is named once, below
		}
		return nil, fmt.Errorf("%w at %s: %v", ErrUnreachable, r.cfg.url, err)
	}
	checks := r.cfg.gradedChecks() // the first request first, always graded
	results := []CheckResult{result(checks[0], first)}
	for _, c := range checks[1:] {
		results = append(results, result(c, c.run(r, ctx)))
	}
	return results, nil
}

func result(c conformanceCheck, v verdict) CheckResult {
	return CheckResult{ID: c.id, Name: c.name, Level: c.level, Ref: c.ref, Quote: c.quote, Note: c.note,
		Passed: v.passed, Skipped: v.skipped, Detail: v.detail}
}

// body returns the next distinct request body.
func (r *conformanceRun) body() []byte {
	b := r.cfg.body(r.nextBody)
	r.nextBody++
	return b
}

// noteProblem keeps an error answer for the problem-details check.
func (r *conformanceRun) noteProblem(e exchange) {
	if e.status >= http.StatusBadRequest {
		r.problems = append(r.problems, e)
	}
}

// hold makes the server slow through the configured hook, if any; the
// returned function undoes it. A failure is kept for the in-progress
// check, which is the one that needs the server slow.
func (r *conformanceRun) hold(ctx context.Context) func() {
	if r.cfg.hold == nil {
		return func() {}
	}
	release, err := r.cfg.hold(ctx)
	if err != nil {
		r.holdErr = err
	}
	if release == nil {
		return func() {}
	}
	return release
}

// maxDetailItems bounds how many defects one detail lists.
const maxDetailItems = 4

// joinDefects joins distinct messages for a detail, listing at most
// maxDetailItems and counting the rest.
func joinDefects(msgs []string) string {
	msgs = dedupe(msgs)
	if len(msgs) > maxDetailItems {
		return fmt.Sprintf("%s; and %d more", strings.Join(msgs[:maxDetailItems], "; "), len(msgs)-maxDetailItems)
	}
	return strings.Join(msgs, "; ")
}

// dedupe drops repeated messages, keeping the first occurrence of each.
func dedupe(msgs []string) []string {
	seen := make(map[string]bool, len(msgs))
	out := msgs[:0:0]
	for _, m := range msgs {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// typedAnswer is an error answer and the problem-type suffix this
// project's profile gives it.
type typedAnswer struct {
	e      exchange
	suffix string
}

// expectType keeps an error answer for the problem-types check (an
// answer that is no error at all is another check's finding).
func (r *conformanceRun) expectType(e exchange, suffix string) {
	if e.status >= http.StatusBadRequest {
		r.typed = append(r.typed, typedAnswer{e, suffix})
	}
}
