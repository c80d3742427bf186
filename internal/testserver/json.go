package testserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/idemkit/idem/internal/bodyread"
)

// requestError is a client error that the handler answers with a problem
// document. Bad input always ends here, never in a 5xx.
type requestError struct {
	status int
	suffix string
	title  string
	detail string
}

func (e *requestError) Error() string { return e.detail }

// invalidRequest is a 400 /invalid-request whose detail names the field.
func invalidRequest(format string, args ...any) *requestError {
	return &requestError{
		status: http.StatusBadRequest,
		suffix: ProblemInvalidRequest,
		title:  "Invalid request",
		detail: fmt.Sprintf(format, args...),
	}
}

// writeRequestError answers with the problem err describes.
func writeRequestError(w http.ResponseWriter, err *requestError) {
	WriteProblem(w, err.status, err.suffix, err.title, err.detail, 0)
}

// requireJSONContentType accepts application/json with any parameters
// (charset=utf-8 and the like) and nothing else.
func requireJSONContentType(r *http.Request) *requestError {
	ct := r.Header.Get("Content-Type")
	mediaType, _, err := mime.ParseMediaType(ct)
	if err != nil || mediaType != "application/json" {
		return &requestError{
			status: http.StatusUnsupportedMediaType,
			suffix: ProblemUnsupportedMedia,
			title:  "Unsupported media type",
			detail: fmt.Sprintf("Content-Type must be application/json, got %q", ct),
		}
	}
	return nil
}

// readBody reads the whole body, refusing more than maxBody bytes with a
// 413 problem.
func readBody(w http.ResponseWriter, r *http.Request, maxBody int64) ([]byte, *requestError) {
	body, err := bodyread.Sized(http.MaxBytesReader(w, r.Body, maxBody), r.ContentLength, maxBody)
	if err == nil {
		return body, nil
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, &requestError{
			status: http.StatusRequestEntityTooLarge,
			suffix: ProblemBodyTooLarge,
			title:  "Request body too large",
			detail: fmt.Sprintf("the request body exceeds %d bytes", maxBody),
		}
	}
	return nil, invalidRequest("the request body could not be read: %v", err)
}

// decodeObject parses body as exactly one JSON object and returns its
// members. It is stricter than encoding/json on purpose: member names must
// be spelled exactly as in allowed (no case folding), may appear once, and
// nothing but white space may follow the object.
func decodeObject(body []byte, allowed ...string) (map[string]json.RawMessage, *requestError) {
	if json.Valid(body) {
		if members, rerr, ok := scanObject(body, allowed); ok {
			return members, rerr
		}
	}
	// Not an object, or not valid JSON: the decoder finds what is wrong.
	return decodeObjectTokens(body, allowed)
}

// decodeObjectTokens is decodeObject with encoding/json's decoder, token
// by token, for bodies scanObject does not take.
func decodeObjectTokens(body []byte, allowed []string) (map[string]json.RawMessage, *requestError) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, invalidRequest("the request body must be a JSON object")
	}
	members := make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, invalidRequest("malformed JSON: %v", err)
		}
		name, _ := tok.(string)
		if !slices.Contains(allowed, name) {
			return nil, invalidRequest("unknown field %q", name)
		}
		if _, dup := members[name]; dup {
			return nil, invalidRequest("field %q appears more than once", name)
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return nil, invalidRequest("malformed JSON in field %q: %v", name, err)
		}
		members[name] = value
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, invalidRequest("malformed JSON: the object is not closed")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, invalidRequest("unexpected data after the JSON object")
	}
	return members, nil
}

// decodeInt reads an integer literal in [lo, hi]. Floats (1.0, 1e3),
// strings and null are refused, not coerced.
func decodeInt(field string, raw json.RawMessage, lo, hi int64) (int64, *requestError) {
	if !isIntegerLiteral(raw) {
		return 0, invalidRequest("%s must be an integer without fraction or exponent, got %s", field, describeJSON(raw))
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, invalidRequest("%s must be an integer from %d to %d", field, lo, hi)
	}
	return n, nil
}

// isIntegerLiteral reports whether raw, already valid JSON, is a number
// without fraction or exponent.
func isIntegerLiteral(raw json.RawMessage) bool {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return false
	}
	return !bytes.ContainsAny(raw, ".eE")
}

// decodeString reads a JSON string; null and other types are refused.
func decodeString(field string, raw json.RawMessage) (string, *requestError) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", invalidRequest("%s must be a string, got %s", field, describeJSON(raw))
	}
	s, err := jsonString(raw)
	if err != nil {
		return "", invalidRequest("%s must be a string, got %s", field, describeJSON(raw))
	}
	return s, nil
}

// decodeDuration reads a non-negative Go duration string such as "500ms".
func decodeDuration(field string, raw json.RawMessage) (time.Duration, *requestError) {
	s, rerr := decodeString(field, raw)
	if rerr != nil {
		return 0, invalidRequest("%s must be a duration string such as \"500ms\", got %s", field, describeJSON(raw))
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, invalidRequest("%s must be a non-negative duration such as \"500ms\", got %q", field, s)
	}
	return d, nil
}

// describeJSON names the JSON type of raw for error details, without
// echoing values that may be long.
func describeJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}
