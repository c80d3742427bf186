package canonjson

import (
	"strconv"
	"strings"

	"github.com/gowebpki/jcs"
)

// numbersSurviveJCS reports whether every number in body, which must be
// valid JSON, keeps its exact value in the JCS form. RFC 8785 writes each
// number as the IEEE 754 double nearest to it (I-JSON), so without this
// check 9007199254740993 and 9007199254740992, or 1e-400 and 0, would be
// one canonical body: two different payments under one fingerprint.
func numbersSurviveJCS(body []byte) bool {
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '"':
			i = closingQuote(body, i)
		case c == '-' || (c >= '0' && c <= '9'):
			end := i
			for end < len(body) && isNumberByte(body[end]) {
				end++
			}
			if !numberSurvivesJCS(string(body[i:end])) {
				return false
			}
			i = end - 1
		}
	}
	return true
}

// closingQuote returns the index of the quote that closes the JSON string
// opening at body[open].
func closingQuote(body []byte, open int) int {
	for i := open + 1; i < len(body); i++ {
		switch body[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(body)
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// numberSurvivesJCS reports whether literal and its JCS form denote the
// same decimal value.
func numberSurvivesJCS(literal string) bool {
	f, err := strconv.ParseFloat(literal, 64)
	if err != nil {
		return false
	}
	canonical, err := jcs.NumberToJSON(f)
	if err != nil {
		return false
	}
	want, ok := parseDecimal(literal)
	if !ok {
		return false
	}
	got, ok := parseDecimal(canonical)
	return ok && got == want
}

// decimal is a number as sign, significant digits (no leading or trailing
// zeros) and a power of ten: equal values have equal decimals. Zero has
// no digits and no sign.
type decimal struct {
	negative bool
	digits   string
	exponent int
}

// parseDecimal reads a JSON number literal exactly, without rounding.
func parseDecimal(literal string) (decimal, bool) {
	negative := strings.HasPrefix(literal, "-")
	mantissa := strings.TrimPrefix(literal, "-")
	exponent := 0
	if i := strings.IndexAny(mantissa, "eE"); i >= 0 {
		var err error
		if exponent, err = strconv.Atoi(mantissa[i+1:]); err != nil {
			return decimal{}, false
		}
		mantissa = mantissa[:i]
	}
	whole, fraction, _ := strings.Cut(mantissa, ".")
	digits := strings.TrimLeft(whole+fraction, "0")
	exponent -= len(fraction)
	if digits == "" {
		return decimal{}, true
	}
	significant := strings.TrimRight(digits, "0")
	exponent += len(digits) - len(significant)
	return decimal{negative: negative, digits: significant, exponent: exponent}, true
}
