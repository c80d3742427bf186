package idemtest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/idemkit/idem/dialect"
)

// checkFirstRequest sends a fresh key; an error means no answer at all.
func (r *conformanceRun) checkFirstRequest(ctx context.Context) (verdict, error) {
	r.firstKey, r.firstBody = r.newKey(), r.body()
	e, err := r.post(ctx, outgoing{what: "first request", keys: []string{r.firstKey}, body: r.firstBody})
	if err != nil {
		return verdict{}, err
	}
	r.first = e
	if !e.success() {
		r.noteProblem(e)
		return fail("got %s, want 2xx; most checks need a successful first request: check the endpoint, auth header, body, --key-format and --key-form", e.summary()), nil
	}
	r.firstOK = true
	r.fresh = append(r.fresh, e)
	return pass("%d, resource %s", e.status, r.cfg.resourceID(e.body)), nil
}

// noFirst is the verdict of a check that builds on a failed first request.
func noFirst() verdict { return skip("the first request did not succeed (see %s)", CheckFirstRequest) }

// keyAccepted reports whether the server took e's key as a key: it ran the
// request, or refused it for what the key already stands for.
func (r *conformanceRun) keyAccepted(e exchange) bool {
	if e.success() {
		return true
	}
	if r.cfg.isDraft() {
		return e.status == http.StatusConflict || e.status == http.StatusUnprocessableEntity
	}
	v := r.cfg.classify(e)
	return v == dialect.KeyReused || v == dialect.InProgress
}

// checkValidKeys sends keys of 1, 36 and the longest allowed length, of
// characters every key format uses: refusing one is its own finding. A
// one-character key has 32 values, so an earlier run under the same
// principal may have used it: it is sent only under the run's own
// principals, where it is proven fresh.
func (r *conformanceRun) checkValidKeys(ctx context.Context) verdict {
	if !r.firstOK {
		return noFirst()
	}
	longest := min(255, r.cfg.dialect.MaxKeyLength)
	lengths := dedupeInts(36, longest)
	if r.cfg.runPrincipals {
		lengths = dedupeInts(1, 36, longest)
	}
	var refused, sent []string
	for _, n := range lengths {
		e, err := r.post(ctx, outgoing{what: fmt.Sprintf("%d-character key", n), keys: []string{plainKey(n)}, body: r.body()})
		if err != nil {
			return fail("%v", err)
		}
		sent = append(sent, strconv.Itoa(n))
		if !r.keyAccepted(e) {
			refused = append(refused, fmt.Sprintf("%d characters: %s", n, e.summary()))
		}
	}
	if len(refused) > 0 {
		return fail("rejects valid keys: %s", strings.Join(refused, "; "))
	}
	if !r.cfg.runPrincipals {
		return pass("keys of %s characters accepted (no 1-character key: under a given principal an earlier run may have used it)",
			andList(sent))
	}
	return pass("keys of %s characters accepted", andList(sent))
}

// andList joins items as "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

func (r *conformanceRun) checkReplay(ctx context.Context) verdict {
	if !r.firstOK {
		return noFirst()
	}
	before := r.countBefore(ctx, nil)
	e, err := r.post(ctx, outgoing{what: "replay", keys: []string{r.firstKey}, body: r.firstBody})
	if err != nil {
		return fail("%v", err)
	}
	made, counted := r.created(ctx, before, nil)
	var problems []string
	if !r.cfg.repeats(e, r.first) && e.status != r.first.status {
		problems = append(problems, fmt.Sprintf("status %s, original %d", e.summary(), r.first.status))
	}
	if e.success() && string(e.body) != string(r.first.body) {
		problems = append(problems, fmt.Sprintf("body differs from the original (resource %s, original %s)",
			r.cfg.resourceID(e.body), r.cfg.resourceID(r.first.body)))
	}
	if counted && made != 0 {
		problems = append(problems, fmt.Sprintf("%d new resources in the list", made))
	}
	if len(problems) > 0 {
		return fail("%s", strings.Join(problems, "; "))
	}
	r.replays = append(r.replays, e)
	r.replayOK = true
	return pass("%d, byte-identical body, %s", e.status, r.noNew(counted))
}

// noNew describes how "no new resource" was established.
func (r *conformanceRun) noNew(counted bool) string {
	if counted {
		return "no new resource in the list"
	}
	return "same resource id (no list to count: " + r.listNote() + ")"
}

func (r *conformanceRun) listNote() string {
	if r.listErr != nil {
		return r.listErr.Error()
	}
	return "no list endpoint"
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
	switch {
	case e.success() && r.cfg.repeats(e, r.first):
		return fail("a different body under a used key got the first answer replayed (%d): the payload is not fingerprinted", e.status)
	case e.success():
		return fail("a different body under a used key ran again (%s)", e.summary())
	case r.cfg.isDraft():
		r.expectType(e, "key-reused")
		if e.status != http.StatusUnprocessableEntity {
			return fail("got %s, want 422", e.summary())
		}
		return pass("422 %s", e.problemType())
	case r.cfg.classify(e) != dialect.KeyReused:
		return fail("got %s, which the %s dialect reads as %s, want key-reused", e.summary(), r.cfg.dialect.Name, r.cfg.classify(e))
	}
	return pass("%d, read as key-reused", e.status)
}

func (r *conformanceRun) checkMissingKey(ctx context.Context) verdict {
	e, err := r.post(ctx, outgoing{what: "no key", body: r.body()})
	if err != nil {
		return fail("%v", err)
	}
	r.noteProblem(e)
	switch {
	case r.cfg.isDraft():
		r.expectType(e, "missing-key")
		if e.status != http.StatusBadRequest {
			return fail("got %s, want 400", e.summary())
		}
	case e.status < 400 || e.status > 499:
		return fail("got %s, want a 4xx refusal", e.summary())
	}
	return pass("%s", e.summary())
}

func (r *conformanceRun) checkInvalidKey(ctx context.Context) verdict {
	k := r.newKey()
	mid := len(k) / 2 // inside the key: surrounding white space may be trimmed
	long := k + plainKey(r.cfg.dialect.MaxKeyLength+1-len(k))
	cases := []outgoing{
		{what: "empty key", keys: []string{""}},
		{what: fmt.Sprintf("%d-character key", len(long)), keys: []string{long}},
	}
	if r.cfg.isDraft() {
		cases = append(cases,
			outgoing{what: "key with a space", keys: []string{withByte(k, mid, ' ')}},
			outgoing{what: "key with a tab", keys: []string{withByte(k, mid, '\t')}},
			outgoing{what: "key with a non-ASCII byte", keys: []string{withByte(k, mid, 0xe9)}})
	}
	if r.cfg.dialect.KeyHeader != "" {
		cases = append(cases, outgoing{what: "two key headers", keys: []string{r.newKey(), r.newKey()}})
	}
	var failures []string
	for _, o := range cases {
		o.body, o.raw = r.body(), true
		e, err := r.post(ctx, o)
		if err != nil {
			failures = append(failures, err.Error())
			continue
		}
		r.noteProblem(e)
		switch {
		case r.cfg.isDraft():
			r.expectType(e, "invalid-key")
			if e.status != http.StatusBadRequest {
				failures = append(failures, fmt.Sprintf("%s: got %s, want 400", o.what, e.summary()))
			}
		case e.status < 400 || e.status > 499 || r.keyAccepted(e):
			failures = append(failures, fmt.Sprintf("%s: got %s, want a 4xx refusal of the key", o.what, e.summary()))
		}
	}
	if len(failures) > 0 {
		return fail("%s", joinDefects(failures))
	}
	return pass("%d malformed keys of the right shape refused", len(cases))
}

// checkQuotedKey: draft-07 defines the key as a Structured Field String,
// so "k" and k are one key. A server may refuse the form the run does not
// use; it must never take the quotes as part of a second key.
func (r *conformanceRun) checkQuotedKey(ctx context.Context) verdict {
	if !r.replayOK {
		return skip("needs a working replay to compare the two forms (see %s)", CheckReplay)
	}
	key, body := r.newKey(), r.body()
	// The form the run does not use goes first, then the run's own.
	other, own := dialect.QuoteKey(key), key
	otherName, sequence := "quoted", "\"k\" then k"
	if r.cfg.quoted {
		other, own = key, dialect.QuoteKey(key)
		otherName, sequence = "bare", "k then \"k\""
	}
	first, err := r.post(ctx, outgoing{what: otherName + " key", keys: []string{other}, body: body, raw: true})
	if err != nil {
		return fail("%v", err)
	}
	r.noteProblem(first)
	if !first.success() {
		return pass("the %s form is refused (%s), so it never names a second key", otherName, first.summary())
	}
	before := r.countBefore(ctx, nil)
	second, err := r.post(ctx, outgoing{what: "the same key in the run's form", keys: []string{own}, body: body, raw: true})
	if err != nil {
		return fail("%v", err)
	}
	made, counted := r.created(ctx, before, nil)
	if !r.cfg.repeats(second, first) || (counted && made != 0) {
		return fail("%s got %s (resource %s), want the answer of resource %s: the quotes were kept in the key",
			sequence, second.summary(), r.cfg.resourceID(second.body), r.cfg.resourceID(first.body))
	}
	r.fresh = append(r.fresh, first)
	r.replays = append(r.replays, second)
	return pass("%s: one resource, %s", sequence, r.noNew(counted))
}

// checkPrincipalScope: two principals, same key and body, must make two
// distinct resources, each replayed to its owner only.
func (r *conformanceRun) checkPrincipalScope(ctx context.Context) verdict {
	switch {
	case r.cfg.second == nil:
		return skip("Header carries Authorization; give a second principal to check scoping")
	case !r.firstOK:
		return noFirst()
	}
	key, body := r.newKey(), r.body()
	asA := outgoing{what: "first principal", keys: []string{key}, body: body}
	asB := outgoing{what: "second principal, same key", keys: []string{key}, body: body, override: r.cfg.second}
	a, err := r.post(ctx, asA)
	if err != nil {
		return fail("%v", err)
	}
	r.noteProblem(a)
	if !a.success() {
		return fail("first principal: got %s, want 2xx", a.summary())
	}
	beforeB := r.countBefore(ctx, r.cfg.second)
	b, err := r.post(ctx, asB)
	if err != nil {
		return fail("%v", err)
	}
	r.noteProblem(b)
	madeB, counted := r.created(ctx, beforeB, r.cfg.second)
	idA, idB := r.cfg.resourceID(a.body), r.cfg.resourceID(b.body)
	switch {
	case !b.success():
		return fail("second principal with the same key: got %s, want a fresh 2xx (keys are shared across principals)", b.summary())
	case (b.sameAnswer(a) || idA == idB) && !(counted && madeB == 1):
		if !counted && r.cfg.idByDigest && strings.HasPrefix(idA, "sha256:") {
			// Equal bodies without an id may be two resources alike:
			// only a count can tell.
			return skip("both principals got the same answer, which names no resource id; " +
				"give a list endpoint (--list-endpoint) or ResourceID to tell two resources from one")
		}
		return fail("second principal with the same key got the first principal's resource %s", idA)
	case counted && madeB != 1:
		return fail("second principal with the same key: %d new resources in its list, want 1", madeB)
	}
	r.fresh = append(r.fresh, a, b)
	if !r.replayOK {
		return pass("one key, two principals: resources %s and %s (replays not judged, see %s)", idA, idB, CheckReplay)
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
		if !r.cfg.repeats(e, o.want) {
			return fail("%s: got %s (resource %s), want the answer of resource %s",
				o.out.what, e.summary(), r.cfg.resourceID(e.body), r.cfg.resourceID(o.want.body))
		}
		r.replays = append(r.replays, e)
	}
	return pass("one key, two principals: resources %s and %s, each replayed to its owner", idA, idB)
}

// checkErrorNotStored: a request refused by validation never executed, so
// in this project's rule its key stays free for the corrected request.
// draft-07 §2.6 also lets a server replay the stored error, so in the
// draft dialect this is graded with ProfileIdem only.
func (r *conformanceRun) checkErrorNotStored(ctx context.Context) verdict {
	switch {
	case r.cfg.invalidBody == nil:
		return skip("no invalid body to send (give InvalidBody, or --invalid-body-template)")
	case !r.firstOK:
		return noFirst()
	}
	key := r.newKey()
	bad, err := r.post(ctx, outgoing{what: "invalid body", keys: []string{key}, body: r.cfg.invalidBody(r.nextBody)})
	if err != nil {
		return fail("%v", err)
	}
	if bad.status < 400 || bad.status > 499 {
		return skip("the invalid body was answered %s, not a 4xx", bad.summary())
	}
	before := r.countBefore(ctx, nil)
	good, err := r.post(ctx, outgoing{what: "valid body, same key", keys: []string{key}, body: r.body()})
	if err != nil {
		return fail("%v", err)
	}
	made, counted := r.created(ctx, before, nil)
	switch {
	case !good.success():
		return fail("after a %d validation error, the corrected request with the same key got %s: the error was stored and the key burned",
			bad.status, good.summary())
	case counted && made != 1:
		return fail("the corrected request got %d but made %d resources, want 1", good.status, made)
	}
	r.fresh = append(r.fresh, good)
	return pass("%d validation error, then %d for the corrected body under the same key", bad.status, good.status)
}

// plainKey returns n random characters (letters and digits).
func plainKey(n int) string {
	if n <= 0 {
		return ""
	}
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(strings.ToLower(randomText()))
	}
	return b.String()[:n]
}

func dedupeInts(ns ...int) []int {
	var out []int
	for _, n := range ns {
		if len(out) == 0 || n > out[len(out)-1] {
			out = append(out, n)
		}
	}
	return out
}
