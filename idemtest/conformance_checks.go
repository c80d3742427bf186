package idemtest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
)

// checkFirstRequest sends a fresh key; an error means no answer at all.
func (r *conformanceRun) checkFirstRequest(ctx context.Context) (verdict, error) {
	r.firstKey, r.firstBody = newKey(), r.body()
	e, err := r.post(ctx, outgoing{what: "first request", keys: []string{r.firstKey}, body: r.firstBody})
	if err != nil {
		return verdict{}, err
	}
	r.first = e
	switch {
	case !e.success():
		r.noteProblem(e)
		return fail("got %s, want 2xx; most checks need a successful first request: check the endpoint, auth header and body", e.summary()), nil
	case e.replayed():
		return fail("a fresh key was answered with Idempotent-Replayed: true"), nil
	}
	r.firstOK = true
	return pass("%d, resource %s", e.status, r.cfg.resourceID(e.body)), nil
}

// noFirst is the verdict of a check that builds on a failed first request.
func noFirst() verdict { return skip("the first request did not succeed (see %s)", CheckFirstRequest) }

func (r *conformanceRun) checkReplay(ctx context.Context) verdict {
	if !r.firstOK {
		return noFirst()
	}
	e, err := r.post(ctx, outgoing{what: "replay", keys: []string{r.firstKey}, body: r.firstBody})
	if err != nil {
		return fail("%v", err)
	}
	var problems []string
	if e.status != r.first.status {
		problems = append(problems, fmt.Sprintf("status %s, original %d", e.summary(), r.first.status))
	}
	if !bytes.Equal(e.body, r.first.body) {
		problems = append(problems, fmt.Sprintf("body differs from the original (resource %s, original %s)",
			r.cfg.resourceID(e.body), r.cfg.resourceID(r.first.body)))
	}
	if !e.replayed() {
		problems = append(problems, "no Idempotent-Replayed: true header")
	}
	if len(problems) > 0 {
		return fail("%s", strings.Join(problems, "; "))
	}
	r.replayOK = true
	return pass("%d, byte-identical body, Idempotent-Replayed: true", e.status)
}

func (r *conformanceRun) checkKeyReuse(ctx context.Context) verdict {
	if !r.firstOK {
		return noFirst()
	}
	e, err := r.post(ctx, outgoing{what: "same key, different body", keys: []string{r.firstKey}, body: r.body()})
	if err != nil {
		return fail("%v", err)
	}
	r.noteProblem(e)
	if msg := e.expectProblem(http.StatusUnprocessableEntity, "key-reused"); msg != "" {
		return fail("%s", msg)
	}
	return pass("422 %s", e.problemType())
}

func (r *conformanceRun) checkMissingKey(ctx context.Context) verdict {
	e, err := r.post(ctx, outgoing{what: "no Idempotency-Key", body: r.body()})
	if err != nil {
		return fail("%v", err)
	}
	r.noteProblem(e)
	if msg := e.expectProblem(http.StatusBadRequest, "missing-key"); msg != "" {
		return fail("%s", msg)
	}
	return pass("400 %s", e.problemType())
}

func (r *conformanceRun) checkInvalidKey(ctx context.Context) verdict {
	cases := []outgoing{
		{what: "empty key", keys: []string{""}},
		{what: "256-character key", keys: []string{strings.Repeat("k", 256)}},
		{what: "key with a control character", keys: []string{"conformance\tkey"}},
		{what: "two Idempotency-Key headers", keys: []string{newKey(), newKey()}},
	}
	var failures []string
	for _, o := range cases {
		o.body = r.body()
		e, err := r.post(ctx, o)
		if err != nil {
			failures = append(failures, err.Error())
			continue
		}
		r.noteProblem(e)
		if msg := e.expectProblem(http.StatusBadRequest, "invalid-key"); msg != "" {
			failures = append(failures, msg)
		}
	}
	if len(failures) > 0 {
		return fail("%s", joinDefects(failures))
	}
	return pass("%d malformed keys answered 400 /invalid-key", len(cases))
}

func (r *conformanceRun) checkQuotedKey(ctx context.Context) verdict {
	if !r.replayOK {
		return skip("needs a working replay (see %s)", CheckReplay)
	}
	key, body := newKey(), r.body()
	quoted, err := r.post(ctx, outgoing{what: "quoted key", keys: []string{`"` + key + `"`}, body: body})
	if err != nil {
		return fail("%v", err)
	}
	r.noteProblem(quoted)
	if !quoted.success() {
		return fail("quoted key: got %s, want 2xx", quoted.summary())
	}
	bare, err := r.post(ctx, outgoing{what: "bare key", keys: []string{key}, body: body})
	if err != nil {
		return fail("%v", err)
	}
	if !bare.replayed() || bare.status != quoted.status || !bytes.Equal(bare.body, quoted.body) {
		return fail("the bare key after its quoted form got %s (resource %s), want a replay of resource %s",
			bare.summary(), r.cfg.resourceID(bare.body), r.cfg.resourceID(quoted.body))
	}
	return pass("\"k\" then k: one resource, replayed")
}

func (r *conformanceRun) checkPrincipalScope(ctx context.Context) verdict {
	switch {
	case r.cfg.second == nil:
		return skip("Header carries Authorization; give a second principal to check scoping")
	case !r.replayOK:
		return skip("needs a working replay (see %s)", CheckReplay)
	}
	key, body := newKey(), r.body()
	asA := outgoing{what: "first principal", keys: []string{key}, body: body}
	asB := outgoing{what: "second principal, same key", keys: []string{key}, body: body, override: r.cfg.second}
	a, err := r.post(ctx, asA)
	if err != nil {
		return fail("%v", err)
	}
	b, err := r.post(ctx, asB)
	if err != nil {
		return fail("%v", err)
	}
	r.noteProblem(a)
	r.noteProblem(b)
	idA, idB := r.cfg.resourceID(a.body), r.cfg.resourceID(b.body)
	switch {
	case !a.success():
		return fail("first principal: got %s, want 2xx", a.summary())
	case !b.success() || b.replayed():
		return fail("second principal with the same key: got %s, want a fresh 2xx", b.summary())
	case idA == idB:
		return fail("second principal with the same key got the first principal's resource %s", idA)
	}
	for _, o := range []struct {
		out  outgoing
		want exchange
	}{{asA, a}, {asB, b}} {
		o.out.what += ", replay"
		e, err := r.post(ctx, o.out)
		if err != nil {
			return fail("%v", err)
		}
		if !e.replayed() || !bytes.Equal(e.body, o.want.body) {
			return fail("%s: got %s (resource %s), want a replay of resource %s",
				o.out.what, e.summary(), r.cfg.resourceID(e.body), r.cfg.resourceID(o.want.body))
		}
	}
	return pass("one key, two principals: resources %s and %s, each replayed to its owner", idA, idB)
}

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
	return pass("%d error answers, all application/problem+json with type, title and status", len(seen))
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
