package server

import (
	"fmt"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"
)

// Bounds on the JSON the fingerprint canonicalises. Canonicalising
// decodes every value, which costs far more than reading the body: these
// keep that cost linear and small, and a JSON body beyond them is
// refused before any of it is decoded.
const (
	// MaxJSONDepth is the deepest nesting of arrays and objects.
	MaxJSONDepth = 64
	// MaxJSONTokens is the most values (containers included) a JSON body
	// may hold under DefaultMaxBody, and under any smaller WithMaxBody: a
	// body of n bytes holds at most n/2+1 values, so every JSON body up to
	// 64 KiB passes whatever it holds. A larger WithMaxBody raises it to
	// one value per jsonBytesPerToken bytes of the max body (JSONTokenLimit).
	MaxJSONTokens = DefaultMaxBody / jsonBytesPerToken

	// jsonBytesPerToken is how many bytes of the max body pay for one
	// JSON value: decoding a dense body of floats allocates about 30
	// bytes per byte, so the values a request may make the fingerprint
	// decode cost at most about the max body again.
	jsonBytesPerToken = 32
)

// JSONTokenLimit is the most values a JSON body may hold under a max body
// of maxBody bytes (WithMaxBody): one per 32 bytes of it, never fewer
// than MaxJSONTokens. Strings need no limit of their own: each is part of
// the body, which maxBody bounds.
func JSONTokenLimit(maxBody int64) int {
	return int(max(maxBody/jsonBytesPerToken, MaxJSONTokens))
}

// jsonShape is what one pass over a body, decoding nothing, tells of it.
type jsonShape uint8

const (
	shapeOK       jsonShape = iota
	shapeBadUTF8            // invalid UTF-8: a decoder would write U+FFFD
	shapeTooDeep            // nesting beyond MaxJSONDepth
	shapeTooLarge           // more values than MaxJSONTokens
)

// scanJSONShape checks body's UTF-8, nesting and value count (at most
// maxTokens) in one pass without allocating. It counts commas, colons and openings, an upper
// bound on the values; it does not validate the grammar, which the
// canonicaliser does once the body is known to be cheap enough.
func scanJSONShape(body []byte, maxTokens int) jsonShape {
	if !utf8.Valid(body) {
		return shapeBadUTF8
	}
	depth, tokens := 0, 1
	inString := false
	for i := 0; i < len(body); i++ {
		c := body[i]
		if inString {
			switch c {
			case '\\':
				i++ // the escaped byte cannot end the string
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			if depth++; depth > MaxJSONDepth {
				return shapeTooDeep
			}
			tokens++
		case ']', '}':
			depth--
		case ',', ':':
			tokens++
		default:
			continue
		}
		if tokens > maxTokens {
			return shapeTooLarge
		}
	}
	return shapeOK
}

// isJSONMediaType reports whether a Content-Type names JSON:
// application/json or a +json type such as application/merge-patch+json.
func isJSONMediaType(contentType string) bool {
	if strings.EqualFold(contentType, "application/json") {
		return true // the common case, without parsing parameters into a map
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// checkJSONBody refuses a body sent as JSON that the fingerprint could
// not hash faithfully (invalid UTF-8) or cheaply (too deep, too many
// values), answering 400 or 413 itself. It reads the Content-Type first,
// so other bodies cost nothing here. maxTokens is the value limit
// (JSONTokenLimit of the max body). scanned reports that the body was
// found within bounds, so the fingerprint need not scan it again.
func checkJSONBody(w http.ResponseWriter, r *http.Request, body []byte, maxTokens int) (ok, scanned bool) {
	if len(body) == 0 || !isJSONMediaType(r.Header.Get("Content-Type")) {
		return true, false
	}
	switch scanJSONShape(body, maxTokens) {
	case shapeBadUTF8:
		WriteProblem(w, http.StatusBadRequest, ProblemInvalidRequest, "Invalid request body",
			"the JSON body is not valid UTF-8", 0)
	case shapeTooDeep:
		WriteProblem(w, http.StatusBadRequest, ProblemInvalidRequest, "Invalid request body",
			fmt.Sprintf("the JSON body nests deeper than %d levels", MaxJSONDepth), 0)
	case shapeTooLarge:
		WriteProblem(w, http.StatusRequestEntityTooLarge, ProblemBodyTooLarge, "Request body too large",
			fmt.Sprintf("the JSON body holds more than %d values (one per %d bytes of the max body; the server's max body raises it)", maxTokens, jsonBytesPerToken), 0)
	default:
		return true, true
	}
	return false, false
}
