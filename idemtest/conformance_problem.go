package idemtest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// problemDefect returns "" when e is an RFC 9457 problem document served
// as application/problem+json whose type, title and status are present
// and well typed and whose status equals the HTTP status; otherwise it
// names the first defect.
func problemDefect(e exchange) string {
	if !e.isProblem() {
		return fmt.Sprintf("%d with Content-Type %q, want application/problem+json", e.status, e.header.Get("Content-Type"))
	}
	var doc problemDoc
	if err := json.Unmarshal(e.body, &doc); err != nil {
		return fmt.Sprintf("%d body is not a JSON object: %v", e.status, err)
	}
	var typ, title string
	var status float64
	switch {
	case json.Unmarshal(doc.Type, &typ) != nil || strings.TrimSpace(typ) == "":
		return fmt.Sprintf("%d problem without a string \"type\"", e.status)
	case !isURIReference(typ):
		return fmt.Sprintf("%d problem \"type\" %q is not a URI reference", e.status, typ)
	case json.Unmarshal(doc.Title, &title) != nil || strings.TrimSpace(title) == "":
		return fmt.Sprintf("%d problem without a string \"title\"", e.status)
	case json.Unmarshal(doc.Status, &status) != nil:
		return fmt.Sprintf("%d problem without a numeric \"status\"", e.status)
	case int(status) != e.status || float64(int(status)) != status:
		return fmt.Sprintf("problem \"status\" %v differs from the HTTP status %d", status, e.status)
	}
	return ""
}

// isURIReference reports whether s parses as a URI reference without
// white space.
func isURIReference(s string) bool {
	if strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	_, err := url.Parse(s)
	return err == nil
}
