package idem

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every URL reparsesAsItself accepts parses back from its string to the
// very same url.URL: the first attempt may then use Begin's copy instead
// of parsing the stored string.
func TestReparsesAsItselfIsExact(t *testing.T) {
	t.Parallel()
	accepted := 0
	for _, raw := range []string{
		"http://127.0.0.1:8080/v1/payments",
		"https://api.example.com/v1/payments?expand=charge&limit=10",
		"https://API.Example.com/a/b;c=d/e@f:g,h$i+j~k_l.m-n",
		"https://api.example.com",
		"https://api.example.com?x=1",
		"https://api.example.com//double//slash",
		"https://api.example.com/?q=a/b?c=d",
		"https://api.example.com/v1/pay%2Fments",
		"https://api.example.com/v1/pay ments",
		"https://api.example.com/caf%C3%A9",
		"https://user:pw@api.example.com/v1",
		"https://api.example.com/v1#frag",
		"https://api.example.com/v1?",
		"https://[::1]:8443/v1",
		"https://api.example.com:/v1",
		"HTTPS://api.example.com/v1",
		"https://api.example.com/v1?q=%zz",
		"https://api.example.com/v1/(x)!*'",
	} {
		u, err := url.Parse(raw)
		require.NoError(t, err, raw)
		u.User = nil
		if !reparsesAsItself(u) {
			continue
		}
		accepted++
		again, err := url.Parse(u.String())
		require.NoError(t, err, raw)
		assert.Equal(t, u, again, "%s does not parse back to itself", raw)
	}
	assert.GreaterOrEqual(t, accepted, 7, "the plain URLs are accepted")

	for _, u := range []*url.URL{
		{Scheme: "https", Host: "api.example.com", Path: "/v1", RawPath: "/v1"},
		{Scheme: "https", Host: "api.example.com", Path: "v1"},
		{Scheme: "https", Host: "api.example.com", Path: "/v1", ForceQuery: true},
		{Scheme: "https", Host: "api.example.com", Path: "/v1", Fragment: "x"},
		{Scheme: "https", Opaque: "//api.example.com/v1"},
		{Scheme: "https", Host: "api.example.com", Path: "/v1?x"},
		{Scheme: "https", Host: "api.example.com", RawQuery: "a=1#b"},
		{Scheme: "https", Host: "api.example.com", RawQuery: "a=\x01"},
		{Scheme: "https", Host: "api.example.com:80:80", Path: "/v1"},
		{Scheme: "https", Host: ":443", Path: "/v1"},
		{Scheme: "https", Host: "api.example.com:4a", Path: "/v1"},
	} {
		assert.False(t, reparsesAsItself(u), "%#v", u)
	}
}

// Random URLs of tricky characters: whatever reparsesAsItself accepts
// parses back to itself.
func TestReparsesAsItselfOnRandomURLs(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(alphabet string, max int) string {
		b := make([]byte, rng.IntN(max+1))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	accepted := 0
	for range 50000 {
		u := &url.URL{
			Scheme:   []string{"http", "https", "HTTP", "ftp"}[rng.IntN(4)],
			Host:     pick("ab09.-:[]%_ ", 8),
			Path:     pick("/aZ09-._~$&+,:;=@%?# !()*'\\\x01\xc3", 12),
			RawQuery: pick("a=1&?#%/ +\\x01", 8),
		}
		if rng.IntN(4) == 0 {
			u.Path = "/" + u.Path
		}
		if rng.IntN(8) == 0 {
			u.RawPath = u.Path
		}
		u.ForceQuery = rng.IntN(8) == 0
		if !reparsesAsItself(u) {
			continue
		}
		accepted++
		again, err := url.Parse(u.String())
		require.NoError(t, err, "%#v", u)
		require.Equal(t, u, again, "%#v does not parse back to itself", u)
	}
	assert.Greater(t, accepted, 100)
}

// recordingServer answers 201 and records each request's URI as sent.
func recordingServer(t *testing.T) (*httptest.Server, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var uris []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		uris = append(uris, r.RequestURI)
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), uris...)
	}
}

// The first attempt goes to the stored URL whether Begin vouched for its
// parse (plain URLs) or not (escapes, secret parameters taken out).
func TestTheFirstAttemptGoesToTheStoredURL(t *testing.T) {
	t.Parallel()
	srv, sent := recordingServer(t)
	c := newTestClient(t)
	for _, tc := range []struct {
		path, wantURI string
		vouched       bool
	}{
		{"/v1/payments?expand=charge", "/v1/payments?expand=charge", true},
		{"/v1/pay%2Fments", "/v1/pay%2Fments", false},
		{"/v1/payments?api_key=s3cret&x=1", "/v1/payments?api_key=s3cret&x=1", false},
	} {
		req := paymentRequest(t, srv.URL, 1, "uri")
		u, err := url.Parse(srv.URL + tc.path)
		require.NoError(t, err)
		req.URL = u
		in := begin(t, c, "", req)
		require.NotNil(t, in.begun)
		assert.Equal(t, tc.vouched, in.begun.parsed, tc.path)
		_, err = c.Do(context.Background(), in)
		require.NoError(t, err, tc.path)
		uris := sent()
		assert.Equal(t, tc.wantURI, uris[len(uris)-1])
	}
}

// The first attempt's URL is a copy: a caller changing resp.Request.URL
// never reaches what Begin kept for the intent.
func TestAttemptRequestOwnsItsURL(t *testing.T) {
	t.Parallel()
	c := newTestClient(t)
	in := begin(t, c, "", paymentRequest(t, "http://127.0.0.1:1", 1, "own-url"))
	require.True(t, in.begun.parsed)
	ctx := context.WithValue(context.Background(), heldClaimKey{}, "marker")
	req, err := attemptRequest(ctx, in.begun.rec, in.begun)
	require.NoError(t, err)
	parsed, err := http.NewRequestWithContext(ctx, in.Method, in.URL, nil)
	require.NoError(t, err)
	assert.Equal(t, parsed.URL, req.URL, "the URL parse of the stored string")
	assert.Equal(t, parsed.Method, req.Method)
	assert.Equal(t, parsed.Host, req.Host)
	assert.Equal(t, [3]any{parsed.Proto, parsed.ProtoMajor, parsed.ProtoMinor}, [3]any{req.Proto, req.ProtoMajor, req.ProtoMinor})
	assert.Equal(t, ctx, req.Context())
	assert.Nil(t, req.Body)
	req.URL.Path = "/elsewhere"
	assert.Equal(t, "/v1/payments", in.begun.target.Path)
}

// The second principal fingerprint is skipped only for the secrets Begin
// named the principal from, and only when nothing may change them.
func TestProvesPrincipalOnlyByConstruction(t *testing.T) {
	t.Parallel()
	c := newTestClient(t)
	in := begin(t, c, "", paymentRequest(t, "http://127.0.0.1:1", 1, "proof"))
	secrets := c.local.secrets(in.Key)
	require.NotNil(t, secrets)
	assert.True(t, c.provesPrincipal(in.begun, secrets, nil))
	assert.False(t, c.provesPrincipal(nil, secrets, nil), "a record Begin did not build here")
	assert.False(t, c.provesPrincipal(in.begun, secrets.Clone(), nil), "an equal map is not Begin's")
	assert.False(t, c.provesPrincipal(in.begun, secrets, url.Values{"token": {"x"}}))

	edited := newTestClient(t, WithRequestEditor(func(context.Context, *http.Request) error { return nil }))
	in = begin(t, edited, "", paymentRequest(t, "http://127.0.0.1:1", 1, "proof"))
	assert.False(t, edited.provesPrincipal(in.begun, edited.local.secrets(in.Key), nil), "an editor may change the credentials")

	named := newTestClient(t, WithPrincipal(func(*http.Request) (string, error) { return "tenant", nil }))
	in = begin(t, named, "", paymentRequest(t, "http://127.0.0.1:1", 1, "proof"))
	assert.False(t, named.provesPrincipal(in.begun, named.local.secrets(in.Key), nil), "a Principal function may read anything")
}

// Secrets that are no longer the ones Begin kept are checked again: an
// intent Begin built is still never sent for another principal.
func TestReplacedSecretsAreCheckedAgain(t *testing.T) {
	t.Parallel()
	srv, sent := recordingServer(t)
	c := newTestClient(t)
	in := begin(t, c, "", paymentRequest(t, srv.URL, 1, "replaced"))
	c.local.putSecrets(in.Key, http.Header{"Authorization": {"Bearer tok_of_another_tenant"}})
	_, err := c.Do(context.Background(), in)
	require.ErrorIs(t, err, ErrCredentialsMismatch)
	assert.Empty(t, sent(), "nothing is sent")
}

// Begin stores each URL as its own string, and vouches for its parse as
// it would for that URL alone, whatever URL it stored before (the memo of
// the last one): repeated, alternated, with user information, a query, a
// path that differs in escapes only.
func TestEachURLIsStoredAsItselfWhateverCameBefore(t *testing.T) {
	t.Parallel()
	c := newTestClient(t)
	raws := []string{
		"https://api.example/v1/payments",
		"https://api.example/v1/payments?expand=charge",
		"https://user:pw@api.example/v1/payments",
		"https://api.example/v1/pay%2Fments",
		"https://api.example:8443/v1/payments",
		"http://api.example/v1/payments",
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 200 {
		raw := raws[r.IntN(len(raws))]
		u, err := url.Parse(raw)
		require.NoError(t, err)
		req := paymentRequest(t, "https://placeholder.example", 1, "memo")
		req.URL, req.Host = u, u.Host
		in := begin(t, c, "", req)
		bare := *u
		bare.User = nil
		require.Equal(t, bare.String(), in.URL, "round %d: %s", i, raw)
		require.NotNil(t, in.begun, raw)
		require.Equal(t, reparsesAsItself(&bare), in.begun.parsed, raw)
		require.Equal(t, bare, in.begun.target, raw)
		if u.User != nil {
			assert.NotEmpty(t, c.local.secrets(in.Key).Get("Authorization"), "user information becomes Basic credentials")
		}
	}
}

// The record Begin allocated for settling is handed out once: a store
// may keep a settled record as it is, so a later Do settles in a new one.
func TestTheWorkRecordIsHandedOutOnce(t *testing.T) {
	t.Parallel()
	blk := new(begunBlock)
	in := begunIntentOf(blk, &urlMemo{}, nil, nil, http.Header{})
	first := in.begun.workRecord()
	assert.Same(t, &blk.work, first)
	second := in.begun.workRecord()
	assert.NotSame(t, first, second)
	var none *begunIntent
	assert.NotNil(t, none.workRecord(), "an intent Begin did not build gets a new record")
}
