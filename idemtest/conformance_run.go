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
	// lockWait is set when the bursts showed duplicates held until their
	// original finished, none refused.
	lockWait bool
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
	id, name, level, ref string
	// quote is the sentence the check grades, as written in its source.
	quote string
	// projectRule marks a check that, in the draft dialect, grades this
	// project's own rule rather than a MUST or SHOULD of the draft: it is
	// then run with ProfileIdem only, at LevelIdem.
	projectRule bool
	// applies reports whether the check belongs to the run's profile and
	// dialect; nil means always.
	applies func(*conformanceConfig) bool
	run     func(*conformanceRun, context.Context) verdict
}

// Draft-07 sections the checks cite.
const (
	refFirst    = "draft-07 §2.6"
	refReplay   = "draft-07 §2.6; RFC 9110 §9.2.2"
	refSyntax   = "draft-07 §2.1"
	refErrors   = "draft-07 §2.7"
	refScope    = "draft-07 §2.6, §5"
	refProblems = "draft-07 §2.7; RFC 9457 §3"
	refProfile  = "PROTOCOL.md (idem profile)"
	// draft-07 §2.4 leaves the fingerprint to the server ("An idempotency
	// fingerprint MAY be used"), so the target's part in it is graded in
	// this project's profile only.
	refTarget = "draft-07 §2.4; PROTOCOL.md (idem profile)"
	// The draft's own rules on a key's shape, a missing key and a stored
	// error are looser than this project's: these checks grade the
	// project's, and cite the draft sentence they go beyond.
	refKeyRules  = "draft-07 §2.1; PROTOCOL.md (idem profile)"
	refKeyNeeded = "draft-07 §2.7; PROTOCOL.md (idem profile)"
	refErrorFree = "draft-07 §2.6; PROTOCOL.md (idem profile)"
)

// Sentences the checks grade, quoted as written.
const (
	quoteItem = `draft-07 §2.1: "Idempotency-Key is an Item Structured Header [RFC8941]. Its value MUST be a String."`
	// quoteKeyRules: the draft leaves the key format to the server.
	quoteKeyRules = quoteItem + ` The draft leaves the key's format to the server; ` +
		`this check grades PROTOCOL.md's rules: "A bare key keeps visible ASCII only", a length limit and one key header.`
	quoteMissingKey = `draft-07 §2.7: "If the Idempotency-Key request header is missing for a documented idempotent operation ` +
		`requiring this header, the resource server SHOULD reply with an HTTP 400 status code". ` +
		`The reference API documents a key as required on every guarded operation; this check grades that rule.`
	quoteErrorNotStored = `draft-07 §2.6: the resource "SHOULD respond with the result of the previously completed operation, ` +
		`success or an error". A server that stores a validation error and replays it follows the draft; ` +
		`this check grades this project's rule that a request refused before it ran leaves its key free.`
)

// conformanceChecks lists the checks after the first request, in the order
// they run. The order matters: earlier checks feed the answers that the
// problem and vocabulary checks judge.
func conformanceChecks() []conformanceCheck {
	return []conformanceCheck{
		{id: CheckValidKeys, name: "1-, 36- and longest keys accepted", level: LevelShould, ref: refSyntax, run: (*conformanceRun).checkValidKeys},
		{id: CheckReplay, name: "replay: same answer, no new resource", level: LevelMust, ref: refReplay, run: (*conformanceRun).checkReplay},
		{id: CheckKeyReuse, name: "same key, other body refused", level: LevelShould, ref: refErrors, applies: fingerprinting, run: (*conformanceRun).checkKeyReuse},
		{id: CheckMissingKey, name: "missing key refused", level: LevelShould, ref: refKeyNeeded, quote: quoteMissingKey,
			projectRule: true, applies: requiresKey, run: (*conformanceRun).checkMissingKey},
		{id: CheckInvalidKey, name: "malformed keys refused", level: LevelShould, ref: refKeyRules, quote: quoteKeyRules,
			projectRule: true, run: (*conformanceRun).checkInvalidKey},
		{id: CheckQuotedKey, name: "quoted key is the bare key", level: LevelMust, ref: refSyntax, applies: draftOnly, run: (*conformanceRun).checkQuotedKey},
		{id: CheckConcurrent, name: "concurrent duplicates, one effect", level: LevelMust, ref: refFirst, run: (*conformanceRun).checkConcurrent},
		{id: CheckInProgress, name: "duplicate in progress refused", level: LevelShould, ref: refErrors, run: (*conformanceRun).checkInProgress},
		{id: CheckPrincipalScope, name: "keys scoped by principal", level: LevelMust, ref: refScope, run: (*conformanceRun).checkPrincipalScope},
		{id: CheckErrorNotStored, name: "validation error leaves the key free", level: LevelShould, ref: refErrorFree,
			quote: quoteErrorNotStored, projectRule: true, run: (*conformanceRun).checkErrorNotStored},
		{id: CheckProblemDetails, name: "errors are RFC 9457 problems", level: LevelShould, ref: refProblems, applies: draftOnly, run: (*conformanceRun).checkProblemDetails},
		{id: CheckReplayHeader, name: "replay marked Idempotent-Replayed", level: LevelIdem, ref: refProfile, applies: idemProfile, run: (*conformanceRun).checkReplayHeader},
		{id: CheckProblemTypes, name: "problem types name the case", level: LevelIdem, ref: refProfile, applies: idemProfile, run: (*conformanceRun).checkProblemTypes},
		{id: CheckRetryAfter, name: "409 carries Retry-After", level: LevelIdem, ref: refProfile, applies: idemProfile, run: (*conformanceRun).checkRetryAfter},
		{id: CheckRequestTarget, name: "same key, other query or path refused", level: LevelIdem, ref: refTarget, applies: idemProfile, run: (*conformanceRun).checkRequestTarget},
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
	results := []CheckResult{result(conformanceCheck{id: CheckFirstRequest, name: "first request succeeds",
		level: LevelMust, ref: refFirst}, first)}
	for _, c := range conformanceChecks() {
		if c.applies != nil && !c.applies(r.cfg) {
			continue
		}
		if c.projectRule && r.cfg.isDraft() {
			if r.cfg.profile != ProfileIdem {
				continue // the draft does not ask it: not graded
			}
			c.level = LevelIdem
		}
		results = append(results, result(c, c.run(r, ctx)))
	}
	if !r.cfg.isDraft() {
		// A provider's documentation, not the draft, says what is right.
		docs := strings.TrimPrefix(r.cfg.dialect.Docs[0], "https://")
		for i := range results {
			results[i].Ref = r.cfg.dialect.Name + ": " + docs
		}
	}
	return results, nil
}

func result(c conformanceCheck, v verdict) CheckResult {
	return CheckResult{ID: c.id, Name: c.name, Level: c.level, Ref: c.ref, Quote: c.quote, Passed: v.passed, Skipped: v.skipped, Detail: v.detail}
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
