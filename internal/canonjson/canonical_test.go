package canonjson

import (
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// canonicalSeeds cover the fast path, each way out of it, bodies jcs
// rejects and numbers jcs would round.
var canonicalSeeds = []string{
	``, ` `, `{}`, `[]`, `{ }`, `[ ]`, `0`, `-1`, `-0`, `01`, `1.5`, `1e3`, `1E+2`, `-`, `--1`,
	`999999999999999`, `1000000000000000`, `-999999999999999`,
	`9007199254740992`, `9007199254740993`, `[1e-400]`, `0.1000000000000000000001`,
	`true`, `false`, `null`, `tru`, `truex`, `[true"x"]`, `nul`, `[1 2]`, `[1,]`, `[,1]`,
	`{"a":1}`, `{"b":1,"a":2}`, `{"a":1,"a":2}`, `{"b":1,"a":1,"b":2}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`,
	` {"amount" : 1000 , "currency":"EUR", "reference":"invoice-2025-0001"} `,
	`{"z":{"y":[3,{"b":true,"a":null}],"x":"s"},"a":[]}`,
	`{"é":1,"e":2}`, `{"a":"\n"}`, `{"a":"\u00e9"}`, `{"a":"\/"}`, "{\"a\":\"\t\"}", `"\ud800"`,
	`{"ab":1,"a":2,"b":3,"":4}`, `[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	`"str"`, `"unterminated`, `{"a":1} x`, `[1]]`, "\xff\xfe", `{"a":1}` + "\n",
	`{"s":"9007199254740993"}`, `{"s":"\"9007199254740993"}`,
}

// checkCanonical holds Canonical to its contract on any input: the fast
// path gives exactly what jcs.Transform gives whenever it answers, and
// Canonical answers jcs's form exactly when jcs accepts the body and
// keeps every number's value.
func checkCanonical(t *testing.T, body string) {
	want, wantErr := jcs.Transform([]byte(body))
	if fast, ok := fastCanonical(nil, []byte(body)); ok {
		require.NoError(t, wantErr, "the fast path accepted %q, which jcs rejects", body)
		require.Equal(t, string(want), string(fast), "fast canonical form of %q", body)
	}
	got, isJSON := Canonical([]byte(body))
	exact := wantErr == nil && numbersSurviveJCS([]byte(body))
	require.Equal(t, exact, isJSON, "accepts %q", body)
	if isJSON {
		require.Equal(t, string(want), string(got), "canonical form of %q", body)
	} else {
		require.Nil(t, got)
	}

	// Behind a prefix, with spare capacity to write into, the same form
	// follows the prefix untouched.
	const prefix = "fields before the body:"
	appended, appendedJSON := AppendCanonical(append(make([]byte, 0, 8), prefix...), []byte(body))
	require.Equal(t, isJSON, appendedJSON, "AppendCanonical accepts %q", body)
	if isJSON {
		require.Equal(t, prefix+string(want), string(appended), "appended canonical form of %q", body)
	} else {
		require.Nil(t, appended)
	}
}

func TestCanonicalMatchesJCS(t *testing.T) {
	t.Parallel()
	for _, body := range canonicalSeeds {
		checkCanonical(t, body)
	}
}

func TestCanonicalTakesPaymentBodiesOnTheFastPath(t *testing.T) {
	t.Parallel()
	got, ok := fastCanonical(nil, []byte(` {"reference":"inv-1", "amount": 1000, "currency":"EUR", "meta":{"b":[1,-2,true,null],"a":false}} `))
	require.True(t, ok, "a payment-style body takes the fast path")
	assert.Equal(t, `{"amount":1000,"currency":"EUR","meta":{"a":false,"b":[1,-2,true,null]},"reference":"inv-1"}`, string(got))

	for _, body := range []string{`{"a":1.5}`, `{"a":"é"}`, `{"a":"\n"}`, `{"a":1,"a":1}`, `-0`, `1000000000000000`, strings.Repeat("[", 40) + strings.Repeat("]", 40)} {
		_, ok := fastCanonical(nil, []byte(body))
		assert.False(t, ok, "%q is left to jcs", body)
	}
}

func TestCanonicalRejectsWhatIsNotExactJSON(t *testing.T) {
	t.Parallel()
	for _, body := range []string{``, ` `, `{"a":1,"a":1}`, "\xff", `{"amount":9007199254740993}`, `[1e-400]`, `{"a":0.1000000000000000000001}`} {
		canon, isJSON := Canonical([]byte(body))
		assert.False(t, isJSON, "%q", body)
		assert.Nil(t, canon, "%q", body)
	}
	canon, isJSON := Canonical([]byte(`{"n":1e0,"amount":9007199254740992.0}`))
	require.True(t, isJSON, "exact numbers canonicalise")
	assert.Equal(t, `{"amount":9007199254740992,"n":1}`, string(canon))
}

func TestCanonicalNeverAliasesBody(t *testing.T) {
	t.Parallel()
	body := []byte(`{"a":1}`)
	canon, isJSON := Canonical(body)
	require.True(t, isJSON)
	body[5] = '2'
	assert.Equal(t, `{"a":1}`, string(canon))
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, seed := range canonicalSeeds {
		f.Add(seed)
	}
	f.Fuzz(checkCanonical)
}

// BenchmarkCanonical compares Canonical with jcs.Transform on a payment
// body that takes the fast path.
func BenchmarkCanonical(b *testing.B) {
	body := []byte(`{"amount":1000,"currency":"EUR","reference":"invoice-2025-0001"}`)
	b.Run("impl=Canonical", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Canonical(body)
		}
	})
	b.Run("impl=jcs", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = jcs.Transform(body)
		}
	})
}
