package server_test

import (
	"bytes"
	"encoding/hex"
	"net/http"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

func fp(body string) string {
	return server.Fingerprint(http.MethodPost, paymentsRoute, []byte(body))
}

func TestFingerprintIsHexSHA256(t *testing.T) {
	t.Parallel()
	got := fp(`{"a":1}`)
	raw, err := hex.DecodeString(got)
	require.NoError(t, err)
	assert.Len(t, raw, 32)
	assert.Equal(t, got, fp(`{"a":1}`), "deterministic")
}

func TestFingerprintCanonicalisesJSON(t *testing.T) {
	t.Parallel()
	for _, same := range [][]string{
		{`{"amount":1000,"currency":"EUR"}`, `{"currency":"EUR","amount":1000}`, " {\n\t\"amount\" : 1000 ,\r\n \"currency\":\"EUR\" } "},
		{`{"n":1}`, `{"n":1.0}`, `{"n":1e0}`, `{"n":10e-1}`, `{"n":1E+0}`},
		{`{"s":"é"}`, `{"s":"\u00e9"}`},
		{`[1,{"b":2,"a":[3,{"d":4,"c":5}]}]`, `[1,{"a":[3,{"c":5,"d":4}],"b":2}]`},
		{`{"z":0}`, `{"z":-0}`},
	} {
		for _, body := range same[1:] {
			assert.Equal(t, fp(same[0]), fp(body), "%s vs %s", same[0], body)
		}
	}
}

func TestFingerprintDistinguishes(t *testing.T) {
	t.Parallel()
	distinct := map[string]string{
		"base":                  fp(`{"amount":1000}`),
		"other value":           fp(`{"amount":1001}`),
		"other type":            fp(`{"amount":"1000"}`),
		"array order":           fp(`[1,2]`),
		"array order swapped":   fp(`[2,1]`),
		"empty body":            fp(``),
		"not JSON":              fp(`amount=1000`),
		"other method":          server.Fingerprint(http.MethodPatch, paymentsRoute, []byte(`{"amount":1000}`)),
		"other route":           server.Fingerprint(http.MethodPost, "/v1/refunds", []byte(`{"amount":1000}`)),
		"boundary shifted":      server.Fingerprint("POST/v1", "/payments", []byte(`{"amount":1000}`)),
		"route into body":       server.Fingerprint(http.MethodPost, "/v1/payments1", []byte(`0`)),
		"route into body, base": server.Fingerprint(http.MethodPost, "/v1/payments", []byte(`10`)),
	}
	seen := make(map[string]string)
	for name, sum := range distinct {
		if other, dup := seen[sum]; dup {
			t.Errorf("%s and %s share a fingerprint", name, other)
		}
		seen[sum] = name
	}
}

func TestFingerprintSeparatesRawFromCanonicalJSON(t *testing.T) {
	t.Parallel()
	// Not JSON (duplicate keys are rejected by JCS), so hashed raw; a raw
	// body must not collide with the JSON body whose canonical form is the
	// same bytes.
	raw := `{"a":1,"a":1}`
	_, err := jcs.Transform([]byte(raw))
	require.Error(t, err, "precondition: the raw body is not canonicalisable")
	assert.NotEqual(t, fp(raw), fp(`{"a":1}`))

	canonical, err := jcs.Transform([]byte(` {"b":2, "a":1}`))
	require.NoError(t, err)
	invalidWithSameBytes := append(bytes.Clone(canonical), '}') // broken JSON
	assert.NotEqual(t, fp(string(canonical)), fp(string(invalidWithSameBytes)))
}

// A payments API must never take two different amounts for one request:
// numbers that IEEE 754 doubles cannot hold exactly would collapse to one
// canonical spelling under JCS, so such bodies are fingerprinted raw.
func TestFingerprintNeverMergesNumbersBeyondFloat64(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]string{
		{`{"amount":9007199254740993}`, `{"amount":9007199254740992}`},
		{`{"amount":12345678901234567890}`, `{"amount":12345678901234567000}`},
		{`{"amount":0.1000000000000000000001}`, `{"amount":0.1}`},
		{`[1e-400]`, `[0]`},
	} {
		assert.NotEqual(t, fp(pair[0]), fp(pair[1]), "%s vs %s", pair[0], pair[1])
	}
	// Exact numbers still canonicalise.
	assert.Equal(t, fp(`{"amount":9007199254740992}`), fp(`{"amount":9007199254740992.0}`))
	assert.Equal(t, fp(`{"n":0.1,"m":-0}`), fp(`{"m":0,"n":1e-1}`))
}

// TestFingerprintLayoutIsStable pins fingerprints of each body kind:
// stores persist them, so a change of layout without a new
// fingerprintVersion would turn every stored key into a reused one.
func TestFingerprintLayoutIsStable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ method, route, body, want string }{
		{"POST", "/v1/payments", `{"currency":"EUR", "amount":1000}`, "7eee252499ec0f79ff22b1be8a8c83fd1d6f8c5bcdb08574afacfd7885cbe3f6"},
		{"POST", "/v1/payments", `{"amount":1e3}`, "728e7ae3b54dfcb5e0608f08db61bd289eaaa3de22319e62ac366c170f9881e3"},
		{"PATCH", "/v1/payouts", "amount=1000&currency=EUR", "09d8dcd6e88885d9abda552fd9b9bede8dd88d5d933e16b2e0c10df8e92ec0ea"},
		{"POST", "/v1/payments", "", "4bad0b33a85cd6f18b35489b1611051831d46b40275a3f3a0c1dd4211430f7f0"},
		{"POST", "/v1/payments", `{"amount":9007199254740993}`, "f89afdf7ca286374dac7872be29890e373ebd92f10f994ad4aeed52d6dfdc68b"},
	} {
		assert.Equal(t, c.want, server.Fingerprint(c.method, c.route, []byte(c.body)), "%s %s %q", c.method, c.route, c.body)
	}
}
