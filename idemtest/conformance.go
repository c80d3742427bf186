package idemtest

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem/dialect"
)

// IDs of the conformance checks, in the order RunConformance reports them.
const (
	CheckFirstRequest   = "first-request"
	CheckValidKeys      = "valid-keys"
	CheckReplay         = "replay"
	CheckKeyReuse       = "key-reuse"
	CheckMissingKey     = "missing-key"
	CheckInvalidKey     = "invalid-key"
	CheckQuotedKey      = "quoted-key"
	CheckConcurrent     = "concurrent-duplicates"
	CheckInProgress     = "in-progress"
	CheckPrincipalScope = "principal-scope"
	CheckErrorNotStored = "error-not-stored"
	CheckProblemDetails = "problem-details"
	// The checks of this project's vocabulary (LevelIdem), run with
	// ProfileIdem only.
	CheckReplayHeader = "replay-header"
	CheckProblemTypes = "problem-types"
	CheckRetryAfter   = "retry-after"
	// CheckRequestTarget: the request target (query, and the path of
	// OtherEndpoint) is part of what a key stands for.
	CheckRequestTarget = "request-target"
)

// Levels of a check: how strongly the sentence it grades asks for what it
// checks. A check is MUST or SHOULD only where that sentence uses the word.
const (
	// LevelMust: the sentence says MUST (draft-07 §2.1: a key is a
	// Structured Field String, so "k" and k are one key).
	LevelMust = "MUST"
	// LevelShould: the sentence says SHOULD (draft-07 §2.6 and §2.7: the
	// request processed, the result replayed, 422, 409, a conflict rather
	// than a second execution).
	LevelShould = "SHOULD"
	// LevelDocumented: a provider dialect's check whose sentence, on the
	// provider's own page, states the behaviour as what the provider
	// does. A failure fails the run, as MUST and SHOULD do.
	LevelDocumented = "documented"
	// LevelAdvice: the source recommends the behaviour without MUST or
	// SHOULD (draft-07 §5 on scoping keys, its problem-document
	// examples), or a provider's page promises less than the check asks,
	// or says nothing that could be confirmed. An advice check that is
	// not met is reported (CheckResult.Advised) and leaves the run's
	// verdict alone.
	LevelAdvice = "advice"
	// LevelIdem: this project's profile, what the draft does not
	// require: problem-type suffixes, Idempotent-Replayed, Retry-After,
	// its key rules (keys of 1 to 255 visible ASCII characters accepted,
	// others refused, a key always required), a validation error that
	// leaves the key free, and the draft's advice (scoping, problem
	// documents) made rules. Never graded by ProfileDraft.
	LevelIdem = "idem"
)

// Profiles of ConformanceOptions.Profile.
const (
	// ProfileDraft grades the MUST and SHOULD levels: draft-07 as any
	// server may implement it. The default.
	ProfileDraft = "draft"
	// ProfileIdem adds the LevelIdem checks: the full vocabulary of this
	// project's reference server.
	ProfileIdem = "idem"
)

// Defaults of ConformanceOptions.
const (
	DefaultConformanceEndpoint    = "/v1/payments"
	DefaultConformanceContentType = "application/json"
	// DefaultConformanceConcurrency is the default burst width.
	DefaultConformanceConcurrency = 20
	// DefaultConformanceBursts is the default number of bursts: one burst
	// rarely catches a check-then-insert race with an instant handler.
	DefaultConformanceBursts = 8
)

// ConformanceOptions configures RunConformance. The zero value checks the
// payments API of the reference server, acting as the bearer principals
// "conformance-a-RUN" and "conformance-b-RUN", RUN random to each run.
type ConformanceOptions struct {
	// Endpoint is the path of the guarded operation, joined to the base
	// URL. Default DefaultConformanceEndpoint.
	Endpoint string
	// OtherEndpoint, when set, is a second path of the same operation
	// that differs from Endpoint only in a path value, such as
	// /v1/accounts/acct_B/refunds for /v1/accounts/acct_A/refunds: the
	// request-target check (ProfileIdem) then also sends a used key
	// there. Without it that check varies the query string only.
	OtherEndpoint string
	// Body returns the request body of the i-th distinct request. Distinct
	// i must give distinct bodies, because the key-reuse check sends a
	// second body under one key. Default: a payments body
	// {"amount":1000,"currency":"EUR","reference":"…"} with a reference
	// unique to the run and to i.
	Body func(i int) []byte
	// ContentType of every request body. Default
	// DefaultConformanceContentType.
	ContentType string
	// Header holds extra headers sent on every request, such as the
	// Authorization of the first principal.
	Header http.Header
	// SecondPrincipal holds the authentication headers of a second
	// principal; they replace the same-named headers of Header for the
	// scoping check. When both Header has no Authorization and
	// SecondPrincipal is nil, the two principals are the bearer tokens
	// "conformance-a-RUN" and "conformance-b-RUN", RUN random to each run. When Header carries an
	// Authorization and SecondPrincipal is nil, the scoping check is
	// skipped.
	SecondPrincipal http.Header
	// HTTPClient sends the requests. Default: a client that keeps enough
	// idle connections for Concurrency and times out each request after
	// 30 s.
	HTTPClient *http.Client
	// Concurrency is the burst width: how many duplicates of one key the
	// concurrency check sends at once. Default
	// DefaultConformanceConcurrency.
	Concurrency int
	// Bursts is how many bursts, each over a fresh key, the concurrency
	// check sends. Default DefaultConformanceBursts.
	Bursts int
	// KeyFormat is the shape of every valid key the checker sends (see
	// KeyFormats). Default KeyFormatUUID.
	KeyFormat string
	// KeyForm is how a valid key is written in a key header: KeyFormBare
	// (the default) or KeyFormQuoted, the Structured Field String that
	// draft-07 §2.1 defines, for a server that parses the header as the
	// Structured Field it is. Header dialects only.
	KeyForm string
	// Profile is ProfileDraft (the default) or ProfileIdem. ProfileIdem
	// grades the draft dialect only (ErrProfileNotForDialect otherwise).
	Profile string
	// Dialect names the provider dialect to grade against, one of
	// dialect.Names() (and "idem", the same as "draft"): where the key
	// travels, its length limit, and how in-progress and key-reuse
	// answers look (dialect.Dialect.Classify). Default "draft".
	Dialect string
	// ListEndpoint is the path of a GET that lists the principal's
	// resources, so the checks count effects on the server rather than
	// trust the answers. Default DefaultConformanceListEndpoint;
	// NoListEndpoint for none.
	ListEndpoint string
	// ListCount reads the number of resources from a list answer.
	// Default: "total", or the length of "data", "items", "results", or
	// of a top-level array.
	ListCount func(body []byte) (int, bool)
	// InvalidBody returns a body the endpoint refuses as invalid (a 4xx
	// validation error), for the check that such an answer does not burn
	// the key. Default: a payment with amount 0 when Body is the default,
	// else none and the check is skipped.
	InvalidBody func(i int) []byte
	// SlowHeader, when set, is added to the requests of the in-progress
	// probe to make the server hold them long enough for a duplicate to
	// arrive while the original is still executing, at least 100 ms (a
	// server-specific hook).
	SlowHeader http.Header
	// Hold, when set, is called before the checks that need a request
	// still executing on the server (concurrent duplicates, in-progress);
	// it should hold each guarded request at least 100 ms (150 ms is what
	// Server.ConformanceOptions and idem check --admin-token use), and the
	// release function it returns undoes that. An error leaves the
	// in-progress check skipped, saying why.
	//
	// Hold applies to the first burst of the concurrency check and to the
	// in-progress probe; the other bursts run at the server's own speed.
	// The in-progress check fails only on proof: a duplicate of an
	// original seen held (at least 100 ms) that was answered with the
	// original's result at its end (lock-and-wait). Without Hold or
	// SlowHeader it passes when a burst's duplicate was refused in
	// progress and is skipped otherwise: answer times alone prove
	// nothing.
	Hold func(ctx context.Context) (release func(), err error)
	// ResourceID extracts the id of the resource a 2xx body describes; the
	// concurrency and scoping checks count distinct ids. Default: the
	// top-level "id" member of a JSON object, or else a digest of the
	// whole body (replays are byte-identical, so equal bodies are one
	// effect).
	ResourceID func(body []byte) string
}

// CheckResult is the outcome of one conformance check.
type CheckResult struct {
	// ID is a stable identifier such as CheckReplay.
	ID string `json:"id"`
	// Name says what the check verifies, in a few words.
	Name string `json:"name"`
	// Level is LevelMust, LevelShould, LevelDocumented, LevelAdvice or
	// LevelIdem.
	Level string `json:"level"`
	// Ref cites where Quote is written: the section of
	// draft-ietf-httpapi-idempotency-key-header-07, PROTOCOL.md, or the
	// provider's page.
	Ref string `json:"ref"`
	// Quote is the sentence the check grades, word for word as its source
	// writes it.
	Quote string `json:"quote"`
	// Note says why the level is what it is where the check goes beyond
	// Quote (a LevelIdem check quotes the draft sentence it goes beyond).
	Note string `json:"note,omitempty"`
	// Passed is true when the server behaved as required.
	Passed bool `json:"passed"`
	// Skipped is true when the check could not be judged (a precondition
	// failed or the situation it needs never arose); Passed is then false.
	Skipped bool `json:"skipped"`
	// Detail explains the verdict: what was seen.
	Detail string `json:"detail"`
}

// Failed reports whether the check ran and the server did not conform,
// at a level that fails the run (any but LevelAdvice).
func (r CheckResult) Failed() bool { return !r.Passed && !r.Skipped && r.Level != LevelAdvice }

// Advised reports whether an advice check ran and the server did not
// follow the advice: reported, without failing the run.
func (r CheckResult) Advised() bool { return !r.Passed && !r.Skipped && r.Level == LevelAdvice }

// ErrProfileNotForDialect is returned by RunConformance when ProfileIdem
// is asked for with a provider dialect: the idem profile grades this
// project's own vocabulary (problem types, Idempotent-Replayed,
// Retry-After, its key rules), which a provider does not speak.
var ErrProfileNotForDialect = errors.New("idemtest: the idem profile grades the draft dialect only")

// ErrUnreachable is returned by RunConformance when the very first request
// could not be sent or answered at all.
var ErrUnreachable = errors.New("idemtest: server unreachable")

// RunConformance runs every protocol check against the server at baseURL
// and returns one result per check, in a fixed order. It returns an error
// only when baseURL is not an http(s) URL or the server cannot be reached
// at all (errors.Is(err, ErrUnreachable)); a non-conforming server is
// reported through the results. The checks create resources on the server.
func RunConformance(ctx context.Context, baseURL string, opts ConformanceOptions) ([]CheckResult, error) {
	r, err := newConformanceRun(baseURL, opts)
	if err != nil {
		return nil, err
	}
	if opts.HTTPClient == nil {
		// The run made its own client: leave no idle connections behind.
		defer r.cfg.client.CloseIdleConnections()
	}
	return r.runAll(ctx)
}

// Conformance runs RunConformance against baseURL and reports each check
// as a subtest named by its ID: a failed check is a t.Errorf, a skipped
// one a t.Skip, advice not followed a t.Logf. An unreachable server fails
// the test at once.
func Conformance(t *testing.T, baseURL string, opts ConformanceOptions) {
	t.Helper()
	results, err := RunConformance(t.Context(), baseURL, opts)
	if err != nil {
		t.Fatalf("conformance: %v", err)
	}
	for _, res := range results {
		t.Run(res.ID, func(t *testing.T) {
			switch {
			case res.Skipped:
				t.Skipf("%s (%s, %s): skipped: %s", res.Name, res.Level, res.Ref, res.Detail)
			case res.Advised():
				t.Logf("%s (advice, %s): not followed: %s", res.Name, res.Ref, res.Detail)
			case !res.Passed:
				t.Errorf("%s (%s, %s): %s", res.Name, res.Level, res.Ref, res.Detail)
			default:
				t.Logf("%s: %s", res.Name, res.Detail)
			}
		})
	}
}

// ConformanceOptions returns options that let RunConformance hold requests
// on this server (through SetHandlerDelay) so the in-progress check always
// sees a request still executing.
func (s *Server) ConformanceOptions() ConformanceOptions {
	return ConformanceOptions{
		HTTPClient: s.Client(),
		Hold: func(context.Context) (func(), error) {
			s.SetHandlerDelay(conformanceHoldDelay)
			return func() { s.SetHandlerDelay(0) }, nil
		},
	}
}

// conformanceHoldDelay is how long Server.ConformanceOptions holds each
// guarded request: long enough for duplicates to overlap, short enough to
// keep the run quick.
const conformanceHoldDelay = 150 * time.Millisecond

// conformanceConfig is ConformanceOptions with defaults applied.
type conformanceConfig struct {
	url         string
	otherURL    string // "" without OtherEndpoint
	body        func(i int) []byte
	contentType string
	header      http.Header
	second      http.Header // nil: scoping check skipped
	client      *http.Client
	concurrency int
	slowHeader  http.Header
	hold        func(context.Context) (func(), error)
	resourceID  func([]byte) string

	bursts      int
	newKey      func() string
	quoted      bool // KeyFormQuoted: valid keys go as RFC 8941 Strings
	profile     string
	dialect     dialect.Dialect
	rules       dialectRules
	listURL     string // "" when there is no list
	listCount   func([]byte) (int, bool)
	customCount bool // listCount is the caller's: it reads the whole count, no pages followed
	invalidBody func(i int) []byte
	// runPrincipals: the principals are the checker's own, unique to the
	// run, so any key is fresh under them.
	runPrincipals bool
	// idByDigest: resourceID is the default, which names a body without
	// an "id" member by its digest, so equal bodies get equal ids.
	idByDigest bool
}

func newConformanceConfig(baseURL string, opts ConformanceOptions) (*conformanceConfig, error) {
	u, err := url.Parse(baseURL)
	if err != nil {
		return nil, fmt.Errorf("idemtest: base URL %q: %w", baseURL, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("idemtest: base URL %q must be an absolute http or https URL", baseURL)
	}
	endpoint := opts.Endpoint
	if endpoint == "" {
		endpoint = DefaultConformanceEndpoint
	}
	if !strings.HasPrefix(endpoint, "/") {
		return nil, fmt.Errorf("idemtest: endpoint %q must start with /", endpoint)
	}
	if opts.OtherEndpoint != "" && !strings.HasPrefix(opts.OtherEndpoint, "/") {
		return nil, fmt.Errorf("idemtest: other endpoint %q must start with /", opts.OtherEndpoint)
	}
	if opts.Concurrency < 0 {
		return nil, fmt.Errorf("idemtest: concurrency %d must be positive", opts.Concurrency)
	}
	if opts.Bursts < 0 {
		return nil, fmt.Errorf("idemtest: bursts %d must be positive", opts.Bursts)
	}
	newKey, err := keyMaker(opts.KeyFormat)
	if err != nil {
		return nil, err
	}
	d, rules, err := lookupDialect(opts.Dialect)
	if err != nil {
		return nil, fmt.Errorf("idemtest: %w", err)
	}
	quoted, err := keyForm(opts.KeyForm, d)
	if err != nil {
		return nil, err
	}
	profile := opts.Profile
	switch profile {
	case "":
		profile = ProfileDraft
	case ProfileDraft, ProfileIdem:
	default:
		return nil, fmt.Errorf("idemtest: profile %q unknown (known: %s, %s)", profile, ProfileDraft, ProfileIdem)
	}
	if profile == ProfileIdem && d.Name != "draft" {
		return nil, fmt.Errorf("%w: dialect %s has its own documented semantics, graded by the draft profile; "+
			"drop the idem profile, or grade the draft dialect", ErrProfileNotForDialect, d.Name)
	}
	list := opts.ListEndpoint
	switch {
	case list == "":
		list = DefaultConformanceListEndpoint
	case list == NoListEndpoint:
	case !strings.HasPrefix(list, "/"):
		return nil, fmt.Errorf("idemtest: list endpoint %q must start with /", list)
	}
	base := strings.TrimSuffix(baseURL, "/")
	c := &conformanceConfig{
		url:         base + endpoint,
		otherURL:    otherURL(base, opts.OtherEndpoint),
		body:        opts.Body,
		contentType: opts.ContentType,
		header:      opts.Header.Clone(),
		second:      opts.SecondPrincipal.Clone(),
		client:      opts.HTTPClient,
		concurrency: opts.Concurrency,
		slowHeader:  opts.SlowHeader.Clone(),
		hold:        opts.Hold,
		resourceID:  opts.ResourceID,
		bursts:      opts.Bursts,
		newKey:      newKey,
		quoted:      quoted,
		profile:     profile,
		dialect:     d,
		rules:       rules,
		listCount:   opts.ListCount,
		invalidBody: opts.InvalidBody,
	}
	if list != NoListEndpoint {
		c.listURL = base + list
	}
	c.applyDefaults()
	return c, nil
}

func (c *conformanceConfig) applyDefaults() {
	if c.body == nil {
		run := rand.Text()[:10]
		c.body = defaultPaymentBody(run)
		if c.invalidBody == nil {
			c.invalidBody = invalidPaymentBody(run)
		}
	}
	if c.bursts == 0 {
		c.bursts = DefaultConformanceBursts
	}
	if c.listCount == nil {
		c.listCount = defaultListCount
	} else {
		c.customCount = true
	}
	if c.contentType == "" {
		c.contentType = DefaultConformanceContentType
	}
	if c.concurrency == 0 {
		c.concurrency = DefaultConformanceConcurrency
	}
	if c.header == nil {
		c.header = http.Header{}
	}
	if c.second == nil && c.header.Get("Authorization") == "" {
		// Principals of this run alone: every key, however short, is
		// then fresh on the server, whatever earlier runs sent.
		run := strings.ToLower(rand.Text()[:10])
		c.header.Set("Authorization", "Bearer conformance-a-"+run)
		c.second = http.Header{"Authorization": {"Bearer conformance-b-" + run}}
		c.runPrincipals = true
	}
	if c.client == nil {
		c.client = &http.Client{
			Timeout:   30 * time.Second,
			Transport: &http.Transport{MaxIdleConnsPerHost: c.concurrency + 1, Proxy: http.ProxyFromEnvironment},
		}
	}
	if c.resourceID == nil {
		c.resourceID = defaultResourceID
		c.idByDigest = true
	}
}

// defaultPaymentBody returns a Body for the reference server's payments
// API whose reference is unique to the run and to i.
func defaultPaymentBody(run string) func(i int) []byte {
	return func(i int) []byte {
		return fmt.Appendf(nil, `{"amount":1000,"currency":"EUR","reference":"conformance-%s-%d"}`, run, i)
	}
}

// invalidPaymentBody returns bodies the reference API refuses (amount 0),
// for the error-not-stored check.
func invalidPaymentBody(run string) func(i int) []byte {
	return func(i int) []byte {
		return fmt.Appendf(nil, `{"amount":0,"currency":"EUR","reference":"conformance-%s-invalid-%d"}`, run, i)
	}
}
