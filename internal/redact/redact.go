// Package redact hides credentials in text: the value of a secret query
// parameter wherever a URL is written into a message. The client uses it
// before anything reaches its keystore, logs or errors, and the idem
// command before it prints what a keystore holds (which an earlier build
// may have written).
package redact

import (
	"net/url"
	"strings"
)

// Value stands in for a secret.
const Value = "REDACTED"

// DefaultParams are the query parameters that carry credentials in common
// APIs (OAuth's access_token, API keys), lower case.
var DefaultParams = []string{"access_token", "api_key", "apikey", "api-key", "token", "client_secret", "password", "secret"}

// IsDefaultParam reports whether name (any case) is one of DefaultParams.
func IsDefaultParam(name string) bool {
	lower := strings.ToLower(name)
	for _, p := range DefaultParams {
		if p == lower {
			return true
		}
	}
	return false
}

// QueryText replaces, in free text, the value of every query parameter
// written as part of a URL (after '?' or '&') whose name isSecret says is
// secret, by Value. Names are unescaped before isSecret sees them.
func QueryText(text string, isSecret func(name string) bool) string {
	return replaceSpans(text, queryValueSpans(text, isSecret))
}

// replaceSpans replaces each [start, end) span of text, in order and not
// overlapping, by Value.
func replaceSpans(text string, spans [][2]int) string {
	if len(spans) == 0 {
		return text
	}
	var b strings.Builder
	last := 0
	for _, s := range spans {
		b.WriteString(text[last:s[0]])
		b.WriteString(Value)
		last = s[1]
	}
	b.WriteString(text[last:])
	return b.String()
}

// queryValueSpans returns where, in text, lie the values QueryText
// replaces: [start, end) of each, in order.
func queryValueSpans(text string, isSecret func(name string) bool) [][2]int {
	if strings.IndexByte(text, '=') < 0 {
		return nil
	}
	var spans [][2]int
	for i := 0; i < len(text); {
		if c := text[i]; c != '?' && c != '&' {
			i++
			continue
		}
		j := i + 1
		for j < len(text) && isParamNameByte(text[j]) {
			j++
		}
		if j == i+1 || j == len(text) || text[j] != '=' {
			i = j
			continue
		}
		name, err := url.QueryUnescape(text[i+1 : j])
		if err != nil || !isSecret(name) {
			i = j
			continue
		}
		k := j + 1
		for k < len(text) && !isValueEnd(text[k]) {
			k++
		}
		k = beforeTrailingColon(text, j+1, k)
		if k > j+1 && text[j+1:k] != Value {
			spans = append(spans, [2]int{j + 1, k})
		}
		i = k
	}
	return spans
}

// isParamNameByte reports whether c may appear in a query parameter's
// name as URLs write it.
func isParamNameByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return c == '-' || c == '_' || c == '.' || c == '%' || c == '~'
}

// isValueEnd reports whether c ends a query parameter's value written in
// text: the next parameter, the fragment, a quote, a bracket or a space.
func isValueEnd(c byte) bool {
	switch c {
	case '&', '#', '"', '\'', '`', '<', '>', '(', ')', '[', ']', '{', '}', ',', ';', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}

// beforeTrailingColon returns end, or end-1 when the value text[start:end]
// ends in a ':' that ends the text or precedes white space: the colon of
// a message ("cannot open …?password=x: refused"), not of the value.
func beforeTrailingColon(text string, start, end int) int {
	if end-start > 1 && text[end-1] == ':' && (end == len(text) || text[end] == ' ' || text[end] == '\t' || text[end] == '\n') {
		return end - 1
	}
	return end
}
