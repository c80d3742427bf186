package idemtest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

// checkProblemDetails judges every error answer of the idempotency layer
// as an RFC 9457 document. type "about:blank" (or none) is fine: naming
// the case is the idem profile's business (checkProblemTypes).
func (r *conformanceRun) checkProblemDetails(context.Context) verdict {
	seen := append(append([]exchange(nil), r.problems...), r.conflicts...)
	if len(seen) == 0 {
		return skip("the server sent no error answer to judge")
	}
	var failures []string
	for _, e := range seen {
		if msg := problemDefect(e); msg != "" {
			failures = append(failures, e.what+": "+msg)
		}
	}
	if len(failures) > 0 {
		return fail("%d of %d error answers: %s", len(failures), len(seen), joinDefects(failures))
	}
	return pass("%d error answers, all application/problem+json", len(seen))
}

// checkReplayHeader: replays carry Idempotent-Replayed: true, first
// answers do not.
func (r *conformanceRun) checkReplayHeader(context.Context) verdict {
	if len(r.replays) == 0 {
		return skip("no replay was seen (see %s)", CheckReplay)
	}
	var failures []string
	for _, e := range r.replays {
		if !e.replayed() {
			failures = append(failures, fmt.Sprintf("%s: no Idempotent-Replayed: true%s", e.what, otherMarker(e.header)))
		}
	}
	for _, e := range r.fresh {
		if e.replayed() {
			failures = append(failures, e.what+": a first answer marked Idempotent-Replayed: true")
		}
	}
	if len(failures) > 0 {
		return fail("%s", joinDefects(failures))
	}
	return pass("%d replays marked, %d first answers not", len(r.replays), len(r.fresh))
}

// otherMarker names a replay header of another spelling, to say why the
// profile's was not found.
func otherMarker(h http.Header) string {
	for name := range h {
		if name != "Idempotent-Replayed" && strings.Contains(strings.ToLower(name), "replay") {
			return fmt.Sprintf(" (it sends %s: %s)", name, h.Get(name))
		}
	}
	return ""
}

// checkProblemTypes: each idempotency error names its case by the suffix
// of its problem type.
func (r *conformanceRun) checkProblemTypes(context.Context) verdict {
	typed := append([]typedAnswer(nil), r.typed...)
	for _, e := range r.conflicts {
		typed = append(typed, typedAnswer{e, "in-progress"})
	}
	if len(typed) == 0 {
		return skip("the server sent no idempotency error to judge")
	}
	var failures []string
	for _, t := range typed {
		if got := t.e.problemType(); !strings.HasSuffix(got, "/"+t.suffix) {
			failures = append(failures, fmt.Sprintf("%s: %d with problem type %q, want a type ending /%s", t.e.what, t.e.status, got, t.suffix))
		}
	}
	if len(failures) > 0 {
		return fail("%s", joinDefects(failures))
	}
	return pass("%d errors, each type ending in its case (/key-reused, /missing-key, /invalid-key, /in-progress)", len(typed))
}

// checkRetryAfter: every 409 says when to retry.
func (r *conformanceRun) checkRetryAfter(context.Context) verdict {
	if len(r.conflicts) == 0 {
		return skip("no 409 was seen (see %s)", CheckInProgress)
	}
	var failures []string
	for _, e := range r.conflicts {
		if !e.retryAfterValid() {
			failures = append(failures, fmt.Sprintf("%s: 409 without a valid Retry-After (got %q)", e.what, e.header.Get("Retry-After")))
		}
	}
	if len(failures) > 0 {
		return fail("%s", joinDefects(failures))
	}
	return pass("%d answers 409, each with Retry-After", len(r.conflicts))
}
