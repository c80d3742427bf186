package draftserver

import (
	"encoding/json"
	"net/http"
)

// problemType is the media type of the error answers: the draft's
// examples describe each error "using [RFC7807]" (now RFC 9457).
const problemType = "application/problem+json"

// problemBody is an RFC 9457 document whose type points at the
// published specification, the "link pointing to relevant documentation"
// that draft-07 §2.7 asks the 400 and 422 bodies to contain.
func problemBody(status int, name, detail string) []byte {
	b, _ := json.Marshal(map[string]any{ // strings and an int always encode
		"type":   SpecPath + "#" + name,
		"title":  http.StatusText(status),
		"status": status,
		"detail": detail,
	})
	return b
}

func writeProblem(w http.ResponseWriter, status int, name, detail string) {
	w.Header().Set("Content-Type", problemType)
	w.WriteHeader(status)
	_, _ = w.Write(problemBody(status, name, detail))
}
