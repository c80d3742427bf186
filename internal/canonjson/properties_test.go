package canonjson

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// identity is what a fingerprint hashes of a body: its canonical form when
// it is exact JSON, else the raw bytes, each marked with its kind.
func identity(body string) string {
	if canon, isJSON := Canonical([]byte(body)); isJSON {
		return "json:" + string(canon)
	}
	return "raw:" + body
}

func TestCanonicalMergesOnlyEqualDocuments(t *testing.T) {
	t.Parallel()
	for _, same := range [][]string{
		{`{"amount":1000,"currency":"EUR"}`, `{"currency":"EUR","amount":1000}`, " {\n\t\"amount\" : 1000 ,\r\n \"currency\":\"EUR\" } "},
		{`{"n":1}`, `{"n":1.0}`, `{"n":1e0}`, `{"n":10e-1}`, `{"n":1E+0}`},
		{`{"s":"é"}`, `{"s":"\u00e9"}`},
		{`[1,{"b":2,"a":[3,{"d":4,"c":5}]}]`, `[1,{"a":[3,{"c":5,"d":4}],"b":2}]`},
		{`{"z":0}`, `{"z":-0}`},
		{`{"n":0.1,"m":-0}`, `{"m":0,"n":1e-1}`},
	} {
		for _, body := range same[1:] {
			assert.Equal(t, identity(same[0]), identity(body), "%s vs %s", same[0], body)
		}
	}
	// A payments API must never take two different amounts for one
	// request.
	for _, pair := range [][2]string{
		{`{"amount":9007199254740993}`, `{"amount":9007199254740992}`},
		{`{"amount":12345678901234567890}`, `{"amount":12345678901234567000}`},
		{`{"amount":0.1000000000000000000001}`, `{"amount":0.1}`},
		{`[1e-400]`, `[0]`},
		{`{"amount":1000}`, `{"amount":"1000"}`},
		{`[1,2]`, `[2,1]`},
	} {
		assert.NotEqual(t, identity(pair[0]), identity(pair[1]), "%s vs %s", pair[0], pair[1])
	}
}

// FuzzCanonicalProperties checks what fingerprints rely on: member order,
// white space and number spelling never matter; a changed value always
// does; and a number JCS would round keeps its body apart from the
// rounded spelling.
func FuzzCanonicalProperties(f *testing.F) {
	for _, seed := range []struct {
		a, b   string
		number string
	}{
		{"amount", "currency", "1"},
		{"x", "y", "1.0"},
		{"", "z", "1e0"},
		{"é", "\"", "10e-1"},
		{"a", "b", "-0"},
		{"k", "l", "123456789012345678901234567890"},
		{"m", "n", "9007199254740993"},
	} {
		f.Add(seed.a, seed.b, seed.number, int64(1000))
	}
	f.Fuzz(func(t *testing.T, keyA, keyB, number string, value int64) {
		if keyA == keyB {
			return // duplicate names are not JSON for JCS
		}
		ka, kb := fmt.Sprintf("%q", keyA), fmt.Sprintf("%q", keyB)
		if _, err := jcs.Transform([]byte(ka)); err != nil {
			return // Go quoting produced a string JCS rejects (invalid UTF-8)
		}
		if _, err := jcs.Transform([]byte(kb)); err != nil {
			return
		}
		if canonical, err := jcs.Transform([]byte(number)); err != nil {
			number = "1"
		} else if isNumber(number) && !sameValue(number, string(canonical)) {
			inexact := fmt.Sprintf(`{%s:%s,%s:%d}`, ka, number, kb, value)
			rounded := fmt.Sprintf(`{%s:%s,%s:%d}`, ka, canonical, kb, value)
			require.NotEqual(t, identity(inexact), identity(rounded), "%s vs %s", inexact, rounded)
			number = "1"
		}
		ordered := fmt.Sprintf(`{%s:%s,%s:%d}`, ka, number, kb, value)
		reordered := fmt.Sprintf("{ %s : %d ,\n\t%s :\r\n%s }", kb, value, ka, number)
		require.Equal(t, identity(ordered), identity(reordered), "reordering and white space must not matter:\n%s\n%s", ordered, reordered)

		canonicalNumber, err := jcs.Transform([]byte(number))
		require.NoError(t, err)
		respelled := fmt.Sprintf(`{%s:%s,%s:%d}`, ka, canonicalNumber, kb, value)
		require.Equal(t, identity(ordered), identity(respelled), "number spelling must not matter")
		for _, spelling := range []string{"%d.0", "%de0", "%d0e-1"} {
			alt := fmt.Sprintf(`{%s:%s,%s:`+spelling+`}`, ka, number, kb, value)
			if _, err := jcs.Transform([]byte(alt)); err != nil || value < -1<<52 || value > 1<<52 {
				continue // beyond exact float64 integers the spellings may round differently
			}
			require.Equal(t, identity(ordered), identity(alt), "%s vs %s", ordered, alt)
		}

		if value == 1<<63-1 {
			return
		}
		changed := fmt.Sprintf(`{%s:%s,%s:%d}`, ka, number, kb, value+1)
		require.NotEqual(t, identity(ordered), identity(changed), "a changed value must change the canonical form")
	})
}

// FuzzCanonicalReformatting re-serialises any JSON body in another member
// order and spacing; the canonical form must not move.
func FuzzCanonicalReformatting(f *testing.F) {
	for _, seed := range []string{``, `{}`, `{"a":1}`, `[1,2,3]`, `"str"`, `1e3`, `{"b":1,"a":{"d":[true,null],"c":"é"}}`, `not json`, "\xff\xfe", `[9007199254740993]`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		id := identity(body)
		require.Equal(t, id, identity(body), "deterministic")
		if _, isJSON := Canonical([]byte(body)); !isJSON {
			return
		}
		dec := json.NewDecoder(strings.NewReader(body))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil || dec.More() {
			return
		}
		reformatted, err := json.MarshalIndent(v, " ", "\t")
		if err != nil {
			return
		}
		require.Equal(t, id, identity(string(reformatted)), "canonical form of %q", body)
	})
}

// sameValue reports whether two JSON numbers denote the same exact value.
func sameValue(a, b string) bool {
	ra, okA := new(big.Rat).SetString(strings.TrimSpace(a))
	rb, okB := new(big.Rat).SetString(strings.TrimSpace(b))
	return okA && okB && ra.Cmp(rb) == 0
}

// isNumber reports whether s, valid JSON, is a number.
func isNumber(s string) bool {
	_, ok := new(big.Rat).SetString(strings.TrimSpace(s))
	return ok
}
