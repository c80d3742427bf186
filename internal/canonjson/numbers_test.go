package canonjson

import (
	"math/big"
	"strconv"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/stretchr/testify/assert"
)

func TestNumbersSurviveJCS(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]bool{
		`{"a":1,"b":[1.5,-0,0.1,1e21,9007199254740992]}`: true,
		`{"s":"9007199254740993","n":2}`:                 true, // numbers in strings are text
		`{"s":"\"9007199254740993","n":2}`:               true,
		`[9007199254740993]`:                             false,
		`{"a":{"b":[0.30000000000000000001]}}`:           false,
		`[1e-400]`:                                       false,
		`[5e-324]`:                                       true, // JCS writes the shortest spelling of the double, which is the input
		`[4.9e-324]`:                                     false,
		`[-12345678901234567890]`:                        false,
	} {
		assert.Equal(t, want, numbersSurviveJCS([]byte(body)), body)
	}
}

// FuzzNumberSurvivesJCS checks the decimal comparison against exact
// rational arithmetic.
func FuzzNumberSurvivesJCS(f *testing.F) {
	for _, seed := range []string{"0", "-0", "1", "1.0", "10e-1", "0.1", "1e21", "1e-7", "9007199254740993",
		"9007199254740992", "12345678901234567890", "5e-324", "1.7976931348623157e308", "123.456e-2"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, literal string) {
		if !numberPattern(literal) || len(literal) > 64 {
			return
		}
		exact, ok := new(big.Rat).SetString(literal)
		if !ok {
			return
		}
		want := false
		if v, err := strconv.ParseFloat(literal, 64); err == nil {
			canonical, err := jcs.NumberToJSON(v)
			if err == nil {
				rounded, _ := new(big.Rat).SetString(canonical)
				want = rounded.Cmp(exact) == 0
			}
		}
		assert.Equal(t, want, numberSurvivesJCS(literal), literal)
	})
}

// numberPattern reports whether s is a JSON number with a short exponent.
func numberPattern(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == start || (s[start] == '0' && i-start > 1) {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == fs {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		es := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == es || i-es > 3 {
			return false
		}
	}
	return i == len(s)
}
