package idemtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
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
	id, name, ref string
	run           func(*conformanceRun, context.Context) verdict
}

// conformanceChecks lists the checks after the first request, in the order
// they run. The order matters: replay feeds quoted-key and scoping, and
// every check feeds problem-details.
func conformanceChecks() []conformanceCheck {
	return []conformanceCheck{
		{CheckReplay, "replay returns the stored answer",
			"PROTOCOL: same key, same fingerprint, completed; draft-07 §2.6", (*conformanceRun).checkReplay},
		{CheckKeyReuse, "same key, different body is 422",
			"PROTOCOL: same key, different fingerprint; draft-07 §2.2, §2.7", (*conformanceRun).checkKeyReuse},
		{CheckMissingKey, "missing key is 400",
			"PROTOCOL: key required but missing; draft-07 §2.7", (*conformanceRun).checkMissingKey},
		{CheckInvalidKey, "malformed keys are 400",
			"PROTOCOL: key malformed; draft-07 §2.1", (*conformanceRun).checkInvalidKey},
		{CheckQuotedKey, "quoted key equals bare key",
			"PROTOCOL: Request header; draft-07 §2.1", (*conformanceRun).checkQuotedKey},
		{CheckConcurrent, "concurrent duplicates, one effect",
			"PROTOCOL: Reserve before effect; draft-07 §2.6", (*conformanceRun).checkConcurrent},
		{CheckInProgress, "409 in-progress with Retry-After",
			"PROTOCOL: original still executing; draft-07 §2.6, §2.7", (*conformanceRun).checkInProgress},
		{CheckPrincipalScope, "keys are scoped by principal",
			"PROTOCOL: Words, Scope; draft-07 §5", (*conformanceRun).checkPrincipalScope},
		{CheckProblemDetails, "errors are RFC 9457 problems",
			"PROTOCOL: Problem documents; RFC 9457 §3", (*conformanceRun).checkProblemDetails},
	}
}

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
	results := []CheckResult{result(CheckFirstRequest, "first request succeeds",
		"PROTOCOL: first request with this key; draft-07 §2.6", first)}
	for _, c := range conformanceChecks() {
		results = append(results, result(c.id, c.name, c.ref, c.run(r, ctx)))
	}
	return results, nil
}

func result(id, name, ref string, v verdict) CheckResult {
	return CheckResult{ID: id, Name: name, Ref: ref, Passed: v.passed, Skipped: v.skipped, Detail: v.detail}
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
