package idem

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Begin names the principal of each set of credentials as if it had never
// seen another: the memo of the last one changes no answer, whatever the
// order, the values' lengths or spellings.
func TestPrincipalMemoNamesEveryCredentialAsWithout(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, WithSecretHeaders("X-Api-Key"))
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	sets := []http.Header{
		{"Authorization": {"Bearer a"}},
		{"Authorization": {"Bearer b"}},                          // same length, another value
		{"Authorization": {"Bearer ab"}},                         // another length
		{"Authorization": {"Bearer a", "Bearer b"}},              // two values
		{"Authorization": {"Bearer b", "Bearer a"}},              // the same two, other order
		{"Authorization": {"Bearer a"}, "X-Api-Key": {"k"}},      // one more secret
		{"X-Api-Key": {"Bearer a"}},                              // the value under another name
		{"Authorization": {"Bearer a"}, "Cookie": {"s=1"}},       // another default secret
		{"Authorization": {"Bearer a"}, "Content-Type": {"x/y"}}, // a header that is not secret
		{},
	}
	for i := range 400 {
		h := sets[r.IntN(len(sets))].Clone()
		req, err := http.NewRequest(http.MethodPost, "https://api.example/v1/payments", strings.NewReader(`{}`))
		require.NoError(t, err)
		req.Header = h
		_, sent, _ := c.splitSecrets(h)
		gotP, gotNames, err := c.beginPrincipal(req, sent)
		require.NoError(t, err)
		wantNames, params := c.secretNamesOf(sent, req)
		require.Equal(t, c.credentialsPrincipal(sent, params, wantNames), gotP, "round %d, credentials %v", i, h)
		require.Equal(t, wantNames, gotNames, "round %d", i)
		if len(gotNames) > 0 {
			gotNames[0] = "changed by the caller" // the memo hands out copies
		}
		in, err := c.Begin(ctx, "", req)
		require.NoError(t, err)
		require.Equal(t, gotP, in.Principal, "round %d", i)
	}
}

// Credentials in the query are never answered from the memo.
func TestPrincipalMemoLeavesQueryCredentialsAlone(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, WithSecretQueryParams("api_key"))
	begin := func(url string) string {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer a")
		in, err := c.Begin(context.Background(), "", req)
		require.NoError(t, err)
		return in.Principal
	}
	plain := begin("https://api.example/v1/payments")
	require.NotEqual(t, plain, begin("https://api.example/v1/payments?api_key=k1"))
	require.NotEqual(t, begin("https://api.example/v1/payments?api_key=k1"), begin("https://api.example/v1/payments?api_key=k2"))
	require.Equal(t, plain, begin("https://api.example/v1/payments"))
}

// Close drops the credentials the memo holds.
func TestPrincipalMemoForgottenOnClose(t *testing.T) {
	t.Parallel()
	c := newTestClient(t)
	req, err := http.NewRequest(http.MethodPost, "https://api.example/v1/payments", strings.NewReader(`{}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer a")
	_, err = c.Begin(context.Background(), "", req)
	require.NoError(t, err)
	require.NotNil(t, c.principalMemo.p.Load())
	require.NoError(t, c.Close())
	require.Nil(t, c.principalMemo.p.Load())
}

func TestSameSecret(t *testing.T) {
	t.Parallel()
	require.True(t, sameSecret("", ""))
	require.True(t, sameSecret("abc", "abc"))
	require.False(t, sameSecret("abc", "abd"))
	require.False(t, sameSecret("abc", "ab"))
	require.True(t, sameSecretValues(nil, []string{}))
	require.False(t, sameSecretValues([]string{"a", "b"}, []string{"b", "a"}))
}

// One Client shared by many goroutines, each Begin with one of several
// tenants' credentials: every intent is named for its own tenant, never
// for the one another goroutine's Begin left in the memo.
func TestPrincipalMemoUnderConcurrentTenants(t *testing.T) {
	t.Parallel()
	c := newTestClient(t)
	tokens := []string{"Bearer tenant-a", "Bearer tenant-b", "Bearer tenant-c", "Bearer tenant-d"}
	want := make(map[string]string, len(tokens))
	for _, tok := range tokens {
		h := http.Header{"Authorization": {tok}}
		names, params := c.secretNamesOf(h, &http.Request{URL: &url.URL{}})
		want[tok] = c.credentialsPrincipal(h, params, names)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				tok := tokens[(g+i)%len(tokens)]
				req, err := http.NewRequest(http.MethodPost, "https://api.example/v1/payments", strings.NewReader(`{}`))
				if err != nil {
					errs <- err
					return
				}
				req.Header.Set("Authorization", tok)
				in, err := c.Begin(context.Background(), "", req)
				if err != nil {
					errs <- err
					return
				}
				if in.Principal != want[tok] {
					errs <- fmt.Errorf("goroutine %d, Begin %d with %q named principal %s, want %s", g, i, tok, in.Principal, want[tok])
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
