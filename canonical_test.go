package idem

import (
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// canonicalSeeds cover the fast path, each way out of it, and bodies jcs
// rejects.
var canonicalSeeds = []string{
	``, ` `, `{}`, `[]`, `{ }`, `[ ]`, `0`, `-1`, `-0`, `01`, `1.5`, `1e3`, `1E+2`, `-`, `--1`,
	`999999999999999`, `1000000000000000`, `-999999999999999`,
	`true`, `false`, `null`, `tru`, `truex`, `[true"x"]`, `nul`, `[1 2]`, `[1,]`, `[,1]`,
	`{"a":1}`, `{"b":1,"a":2}`, `{"a":1,"a":2}`, `{"b":1,"a":1,"b":2}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`,
	` {"amount" : 1000 , "currency":"EUR", "reference":"invoice-2025-0001"} `,
	`{"z":{"y":[3,{"b":true,"a":null}],"x":"s"},"a":[]}`,
	`{"é":1,"e":2}`, `{"a":"\n"}`, `{"a":"\u00e9"}`, `{"a":"\/"}`, "{\"a\":\"\t\"}", `"\ud800"`,
	`{"ab":1,"a":2,"b":3,"":4}`, `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	`"str"`, `"unterminated`, `{"a":1} x`, `[1]]`, "\xff\xfe", `{"a":1}` + "\n",
}

// The fast path must give exactly what jcs.Transform gives whenever it
// answers at all, and canonicalJSON must agree with jcs on every input.
func checkCanonicalAgainstJCS(t *testing.T, body string) {
	want, wantErr := jcs.Transform([]byte(body))
	if fast, ok := fastCanonical([]byte(body)); ok {
		require.NoError(t, wantErr, "the fast path accepted %q, which jcs rejects", body)
		require.Equal(t, string(want), string(fast), "fast canonical form of %q", body)
	}
	got, ok := canonicalJSON([]byte(body))
	require.Equal(t, wantErr == nil, ok, "accepts %q", body)
	if ok {
		require.Equal(t, string(want), string(got), "canonical form of %q", body)
	}
}

func TestCanonicalJSONMatchesJCS(t *testing.T) {
	t.Parallel()
	for _, body := range canonicalSeeds {
		checkCanonicalAgainstJCS(t, body)
	}
}

func TestFastCanonicalTakesPaymentBodies(t *testing.T) {
	t.Parallel()
	got, ok := fastCanonical([]byte(` {"reference":"inv-1", "amount": 1000, "currency":"EUR", "meta":{"b":[1,-2,true,null],"a":false}} `))
	require.True(t, ok, "a payment-style body takes the fast path")
	assert.Equal(t, `{"amount":1000,"currency":"EUR","meta":{"a":false,"b":[1,-2,true,null]},"reference":"inv-1"}`, string(got))

	for _, body := range []string{`{"a":1.5}`, `{"a":"é"}`, `{"a":"\n"}`, `{"a":1,"a":1}`, `-0`, strings.Repeat("[", 40) + strings.Repeat("]", 40)} {
		_, ok := fastCanonical([]byte(body))
		assert.False(t, ok, "%q is left to jcs", body)
	}
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, seed := range canonicalSeeds {
		f.Add(seed)
	}
	f.Fuzz(checkCanonicalAgainstJCS)
}

// BenchmarkCanonicalJSON compares canonicalJSON with jcs.Transform on a
// payment body that takes the fast path.
func BenchmarkCanonicalJSON(b *testing.B) {
	body := []byte(`{"amount":1000,"currency":"EUR","reference":"invoice-2025-0001"}`)
	b.Run("impl=canonicalJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			canonicalJSON(body)
		}
	})
	b.Run("impl=jcs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = jcs.Transform(body)
		}
	})
}
