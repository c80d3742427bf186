package idemtest

import (
	"strings"
)

// source is what one check grades: the sentence, where it is written, and
// how strongly it asks. The quote is the source's own text, word for word.
type source struct {
	level, ref, quote string
	// note says why the level is what it is, where the check goes beyond
	// the quoted sentence or the sentence lacks a MUST or SHOULD.
	note string
}

// The draft's sentences, as written in
// draft-ietf-httpapi-idempotency-key-header-07 (the text of its source at
// https://github.com/ietf-wg-httpapi/idempotency, commit dab060c, which -07
// republished unchanged). Section numbers are the draft's.
const (
	draftSyntax = "Idempotency-Key is an Item Structured Header [RFC8941]. " +
		"Its value MUST be a String (Section 3.3.3 of [RFC8941])."
	draftFingerprint = "An idempotency fingerprint MAY be used in conjunction with an idempotency key " +
		"to determine the uniqueness of a request."
	draftFirst = "The resource SHOULD process the request normally and respond with an appropriate " +
		"response and status code."
	draftRetry = "The request was retried after the original request completed. The resource SHOULD respond " +
		"with the result of the previously completed operation, success or an error."
	draftConcurrent = "The request was retried before the original request completed. The resource SHOULD " +
		"respond with a resource conflict error."
	draftMissing = "If the Idempotency-Key request header is missing for a documented idempotent operation " +
		"requiring this header, the resource SHOULD reply with an HTTP 400 status code with body containing " +
		"a link pointing to relevant documentation."
	draftReuse = "If there is an attempt to reuse an idempotency key with a different request payload, " +
		"the resource SHOULD reply with a HTTP 422 status code with body containing a link pointing to " +
		"relevant documentation."
	draftInProgress = "If the request is retried, while the original request is still being processed, " +
		"the resource SHOULD reply with an HTTP 409 status code with body containing problem description."
	draftProblemExample = "Following examples shows an error response describing the problem using [RFC7807]."
	draftComposite      = "On the resource, implement a unique composite key as the idempotent cache lookup key. " +
		"For example, a composite key MAY be implemented by combining the idempotency key sent by the " +
		"client with other client specific attributes known only to the resource."
)

// Sentences of docs/PROTOCOL.md that the idem profile's own checks grade.
const (
	protocolReplayHeader = "stored headers + `Idempotent-Replayed: true`"
	protocolRetryAfter   = "problem+json, `Retry-After: <seconds>`"
	protocolProblemTypes = "the `type` URIs share one documented prefix so clients can match on the suffix."
	refProtocolTable     = "PROTOCOL.md (idem profile)"
)

// draftSources is what each check grades in the draft dialect. LevelIdem:
// graded with ProfileIdem only. LevelAdvice: reported by ProfileDraft
// without failing the run, graded at LevelIdem by ProfileIdem.
var draftSources = map[string]source{
	CheckFirstRequest: {level: LevelShould, ref: "draft-07 §2.6", quote: draftFirst},
	CheckValidKeys: {level: LevelIdem, ref: "draft-07 §2.1; PROTOCOL.md (idem profile)", quote: draftSyntax,
		note: "The draft leaves a key's format to the server (§5 recommends a fixed, published one), so keys of 1, 36 " +
			"and 255 characters being accepted is this project's rule (PROTOCOL.md: 1–255 characters of visible ASCII)."},
	CheckReplay:   {level: LevelShould, ref: "draft-07 §2.6", quote: draftRetry},
	CheckKeyReuse: {level: LevelShould, ref: "draft-07 §2.7", quote: draftReuse},
	CheckMissingKey: {level: LevelIdem, ref: "draft-07 §2.7; PROTOCOL.md (idem profile)", quote: draftMissing,
		note: "The draft asks for 400 only where a key is documented as required; this grades the reference API's " +
			"rule that every guarded operation requires one."},
	CheckInvalidKey: {level: LevelIdem, ref: "draft-07 §2.1; PROTOCOL.md (idem profile)", quote: draftSyntax,
		note: "The draft leaves a key's format to the server; this grades PROTOCOL.md's rules: bare keys of visible " +
			"ASCII, at most 255 characters, one key header, each refused 400."},
	CheckQuotedKey:  {level: LevelMust, ref: "draft-07 §2.1", quote: draftSyntax},
	CheckConcurrent: {level: LevelShould, ref: "draft-07 §2.6", quote: draftConcurrent},
	CheckInProgress: {level: LevelShould, ref: "draft-07 §2.7", quote: draftInProgress},
	CheckPrincipalScope: {level: LevelAdvice, ref: "draft-07 §5", quote: draftComposite,
		note: "§5 recommends this as a best practice, with MAY and no MUST or SHOULD: advice for the draft profile; " +
			"the idem profile grades PROTOCOL.md's scope (principal + method + route)."},
	CheckErrorNotStored: {level: LevelIdem, ref: "draft-07 §2.6; PROTOCOL.md (idem profile)", quote: draftRetry,
		note: "A server that stores a validation error and replays it follows the draft; this grades this project's " +
			"rule that a request refused before it ran leaves its key free."},
	CheckProblemDetails: {level: LevelAdvice, ref: "draft-07 §2.7; RFC 9457 §3", quote: draftProblemExample,
		note: "The draft shows problem documents in its examples without asking for them: advice for the draft " +
			"profile; the idem profile grades PROTOCOL.md's rule that errors are RFC 9457 problems."},
	CheckReplayHeader: {level: LevelIdem, ref: refProtocolTable, quote: protocolReplayHeader},
	CheckProblemTypes: {level: LevelIdem, ref: refProtocolTable, quote: protocolProblemTypes},
	CheckRetryAfter:   {level: LevelIdem, ref: refProtocolTable, quote: protocolRetryAfter},
	CheckRequestTarget: {level: LevelIdem, ref: "draft-07 §2.4; PROTOCOL.md (idem profile)", quote: draftFingerprint,
		note: "The draft leaves the fingerprint to the server; this grades this project's, which holds the request " +
			"target: a used key sent to another query or path value is key reuse (422)."},
}

// Provider pages the dialect checks quote.
const (
	stripePage = "https://docs.stripe.com/api/idempotent_requests"
	paypalPage = "https://developer.paypal.com/api/rest/reference/idempotency/"
	adyenPage  = "https://docs.adyen.com/development-resources/api-idempotency/"
	squarePage = "https://developer.squareup.com/docs/working-with-apis/idempotency"
)

// Sentences of the provider pages, as written there.
const (
	stripeLength     = "Idempotency keys are up to 255 characters long."
	stripeReplay     = "Subsequent requests with the same key return the same result, including 500 errors."
	stripeCompares   = "The idempotency layer compares incoming parameters to those of the original request and errors if they’re not the same to prevent accidental misuse."
	stripeNoSecond   = "Then, if a connection error occurs, you can safely repeat the request without risk of creating a second object or performing the update twice."
	stripeConflict   = "If incoming parameters fail validation, or the request conflicts with another request that’s executing concurrently, we don’t save the idempotent result because no API endpoint initiates the execution."
	stripeRetryThese = stripeConflict + " You can retry these requests."

	stripeV2NoRepeat = "With API v2, retries don’t repeat successful operations."

	paypalReplay       = "For example, when you include a previously specified PayPal-Request-Id header in a request, PayPal returns the latest status of the previous request that used that same header."
	paypalSimultaneous = "When you send two simultaneous API requests with same PayPal-Request-Id header, PayPal processes the first request and might fail the second request."

	adyenLength = "The <key> is a unique identifier for the message with a maximum of 64 characters (we recommend a UUID)."
	adyenReplay = "If the Adyen payments platform already processed the request, the response to the first attempt will be returned without duplication."
	adyenOnce   = "The Adyen API supports idempotency, allowing you to retry a request multiple times while only performing the action once."
	adyenScope  = "Keys are stored at a company account level. The system checks that the idempotency keys are unique to the company account."

	squareReplay = "If you make the same CreatePayment request with the same idempotency key again, the endpoint knows it's a duplicate request. It doesn't take the payment again. Instead of getting an error, the endpoint returns the response as the first successful CreatePayment response."
	squareReuse  = "If you use the same idempotency key but change the CreatePayment request (for example, specify a different payment amount), you get an error indicating that you used the idempotency key previously."
)

// limitOnly is the note of an invalid-key check whose page gives a key
// limit and nothing more.
const limitOnly = "The page gives the key's limit, not what a longer, empty or repeated key is answered: advice."

// providerSources is what each check grades under a provider dialect:
// LevelDocumented where the provider's page states it, LevelAdvice where
// the page's sentence promises less than the check asks. A check absent
// here has no sentence on the provider's page that could be confirmed: it
// is advice, quoting the draft (see sourceFor).
var providerSources = map[string]map[string]source{
	"stripe": {
		CheckValidKeys:      {level: LevelDocumented, ref: stripePage, quote: stripeLength},
		CheckReplay:         {level: LevelDocumented, ref: stripePage, quote: stripeReplay},
		CheckKeyReuse:       {level: LevelDocumented, ref: stripePage, quote: stripeCompares},
		CheckInvalidKey:     {level: LevelAdvice, ref: stripePage, quote: stripeLength, note: limitOnly},
		CheckConcurrent:     {level: LevelDocumented, ref: stripePage, quote: stripeNoSecond},
		CheckInProgress:     {level: LevelDocumented, ref: stripePage, quote: stripeConflict},
		CheckErrorNotStored: {level: LevelDocumented, ref: stripePage, quote: stripeRetryThese},
	},
	"paypal": {
		CheckReplay:     {level: LevelDocumented, ref: paypalPage, quote: paypalReplay},
		CheckConcurrent: {level: LevelDocumented, ref: paypalPage, quote: paypalSimultaneous},
		CheckInProgress: {level: LevelAdvice, ref: paypalPage, quote: paypalSimultaneous,
			note: "The page says PayPal \"might fail the second request\": not a promise, so advice."},
	},
	"adyen": {
		CheckValidKeys:  {level: LevelDocumented, ref: adyenPage, quote: adyenLength},
		CheckReplay:     {level: LevelDocumented, ref: adyenPage, quote: adyenReplay},
		CheckInvalidKey: {level: LevelAdvice, ref: adyenPage, quote: adyenLength, note: limitOnly},
		CheckConcurrent: {level: LevelDocumented, ref: adyenPage, quote: adyenOnce},
		CheckPrincipalScope: {level: LevelDocumented, ref: adyenPage, quote: adyenScope,
			note: "The two principals must be two company accounts: users of one account share its keys."},
	},
	"stripe-v2": {
		CheckConcurrent: {level: LevelDocumented, ref: stripePage, quote: stripeV2NoRepeat},
	},
	"square": {
		CheckReplay:     {level: LevelDocumented, ref: squarePage, quote: squareReplay},
		CheckKeyReuse:   {level: LevelDocumented, ref: squarePage, quote: squareReuse},
		CheckConcurrent: {level: LevelDocumented, ref: squarePage, quote: squareReplay},
	},
}

// sourceFor returns what check id grades in this run, and false when the
// run does not grade it at all (a LevelIdem check of the draft dialect
// without ProfileIdem).
func (c *conformanceConfig) sourceFor(id string) (source, bool) {
	draft, ok := draftSources[id]
	if !ok {
		return source{}, false
	}
	if !c.isDraft() {
		if s, ok := providerSources[c.dialect.Name][id]; ok {
			s.ref = c.dialect.Name + ": " + strings.TrimPrefix(s.ref, "https://")
			return s, true
		}
		if id == CheckFirstRequest {
			// The precondition of every other check, whatever the dialect.
			return draft, true
		}
		draft.level = LevelAdvice
		draft.ref, _, _ = strings.Cut(draft.ref, "; PROTOCOL.md") // the draft's part: the project's rules are not the provider's
		draft.ref += " (" + c.dialect.Name + ": unconfirmed)"
		draft.note = "No sentence of " + c.dialect.Name + "'s pages could be confirmed for this check: advice, " +
			"quoting the draft."
		return draft, true
	}
	switch draft.level {
	case LevelIdem:
		return draft, c.profile == ProfileIdem
	case LevelAdvice:
		if c.profile == ProfileIdem {
			draft.level = LevelIdem
			draft.ref += "; PROTOCOL.md (idem profile)"
		}
	}
	return draft, true
}

// CheckSpec describes one conformance check as a run grades it: what
// CheckResult carries before the verdict.
type CheckSpec struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Level string `json:"level"`
	Ref   string `json:"ref"`
	Quote string `json:"quote"`
	Note  string `json:"note,omitempty"`
}

// ListConformanceChecks returns the checks RunConformance grades with this
// profile and dialect (as in ConformanceOptions; "" for the defaults), in
// report order, each with the sentence it grades. A check that needs an
// option the run lacks (InvalidBody, a second principal) is listed all the
// same: the run reports it skipped.
func ListConformanceChecks(profile, dialectName string) ([]CheckSpec, error) {
	cfg, err := newConformanceConfig("http://127.0.0.1/", ConformanceOptions{Profile: profile, Dialect: dialectName})
	if err != nil {
		return nil, err
	}
	var out []CheckSpec
	for _, c := range cfg.gradedChecks() {
		out = append(out, CheckSpec{ID: c.id, Name: c.name, Level: c.level, Ref: c.ref, Quote: c.quote, Note: c.note})
	}
	return out, nil
}

// gradedChecks is the check table of this run: the first request, then
// every check that applies, each with its source filled in.
func (c *conformanceConfig) gradedChecks() []conformanceCheck {
	all := append([]conformanceCheck{firstRequestCheck()}, conformanceChecks()...)
	var out []conformanceCheck
	for _, chk := range all {
		if chk.applies != nil && !chk.applies(c) {
			continue
		}
		s, graded := c.sourceFor(chk.id)
		if !graded {
			continue
		}
		chk.level, chk.ref, chk.quote, chk.note = s.level, s.ref, s.quote, s.note
		out = append(out, chk)
	}
	return out
}
