package testserver

import (
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
)

// digitsPattern is a value of an integer field that stands for a JSON
// number: decimal digits.
var digitsPattern = regexp.MustCompile(`^[0-9]{1,19}$`)

// isFormContentType reports whether r's body is
// application/x-www-form-urlencoded (with any parameters).
func isFormContentType(r *http.Request) bool {
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mediaType == "application/x-www-form-urlencoded"
}

// formFields reads a form-encoded body as the members a JSON body would
// have, so one validation serves both: a value of digits in one of the
// integers fields becomes a JSON number, every other value a JSON string
// (which an integer field then refuses by name). As with JSON, an unknown
// or repeated field is refused.
func formFields(body []byte, integers []string, allowed ...string) (map[string]json.RawMessage, *requestError) {
	values, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, invalidRequest("malformed form-encoded body: %v", err)
	}
	fields := make(map[string]json.RawMessage, len(values))
	for name, vals := range values {
		if !slices.Contains(allowed, name) {
			return nil, invalidRequest("unknown field %q", name)
		}
		if len(vals) != 1 {
			return nil, invalidRequest("field %q appears more than once", name)
		}
		if slices.Contains(integers, name) && digitsPattern.MatchString(vals[0]) {
			fields[name] = json.RawMessage(vals[0])
			continue
		}
		quoted, err := json.Marshal(vals[0])
		if err != nil {
			return nil, invalidRequest("field %q: %v", name, err)
		}
		fields[name] = quoted
	}
	return fields, nil
}
