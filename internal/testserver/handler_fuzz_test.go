package testserver

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzServerHandler throws arbitrary methods, paths, headers and bodies at
// the whole server: every answer is below 500, and every error is a
// problem document.
func FuzzServerHandler(f *testing.F) {
	for _, seed := range []struct {
		method, path, key, auth, contentType, body string
	}{
		{"POST", "/v1/payments", "k", "Bearer t", "application/json", `{"amount":1,"currency":"EUR"}`},
		{"POST", "/v1/payouts", `"k\"q"`, "", "application/json; charset=utf-8", `{"amount":9007199254740993,"currency":"EUR"}`},
		{"POST", "/v1/payments", "a,b", "Bearer t", "application/json", `{"amount":1,"currency":"EUR","reference":"\u0000"}`},
		{"POST", "/v1/payments", "k\nk", "Basic x", "text/plain", `amount=1`},
		{"PATCH", "/v1/payments", "", "", "", ``},
		{"HEAD", "/v1/payments", "k", "bearer  t ", "", ``},
		{"GET", "/v1/payments/%00", "", "", "", ``},
		{"GET", "/v1/operations/op_x", "", "Bearer", "", ``},
		{"OPTIONS", "/v1/payments", "", "", "", ``},
		{"GET", "*", "", "", "", ``},
		{"DELETE", "/v1//payments/../payouts", "k", "", "", `{}`},
		{"POST", "/v1/payments", strings.Repeat("k", 256), "", "application/json", `{"amount":1e400,"currency":"EUR"}`},
	} {
		f.Add(seed.method, seed.path, seed.key, seed.auth, seed.contentType, []byte(seed.body))
	}
	s, err := New(WithServerMaxBody(4096))
	require.NoError(f, err)
	f.Cleanup(func() { _ = s.Close() })
	h := s.Handler()
	f.Fuzz(func(t *testing.T, method, path, key, auth, contentType string, body []byte) {
		if method == "" || strings.ContainsFunc(method, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
			return // net/http refuses such methods before any handler runs
		}
		u, err := url.ParseRequestURI(path)
		if err != nil {
			return
		}
		req := httptest.NewRequest(http.MethodGet, "/", bytes.NewReader(body))
		req.Method, req.URL, req.RequestURI = method, u, path
		req.ContentLength = int64(len(body))
		for name, values := range map[string]string{KeyHeader: key, "Authorization": auth, "Content-Type": contentType} {
			for _, v := range strings.Split(values, "\n") {
				if v != "" {
					req.Header.Add(name, v)
				}
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Less(t, rec.Code, 500, "%s %s: %s", method, path, rec.Body)
		if rec.Code >= 400 {
			require.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"), "%s %s: %s", method, path, rec.Body)
		}
	})
}
