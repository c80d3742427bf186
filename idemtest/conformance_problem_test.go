package idemtest

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

func problemExchange(status int, contentType, body string) exchange {
	return exchange{what: "probe", status: status, header: http.Header{"Content-Type": {contentType}}, body: []byte(body)}
}

func TestProblemDefect(t *testing.T) {
	t.Parallel()
	const good = `{"type":"https://example.com/problems/missing-key","title":"Missing key","status":400,"detail":"x"}`
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		want        string // substring of the defect, "" for none
	}{
		{"conforming", 400, "application/problem+json", good, ""},
		{"media type parameters", 400, "application/problem+json; charset=utf-8", good, ""},
		{"relative type", 400, "application/problem+json", `{"type":"/problems/x","title":"X","status":400}`, ""},
		{"plain json", 400, "application/json", good, "want application/problem+json"},
		{"no content type", 400, "", good, "want application/problem+json"},
		{"not an object", 400, "application/problem+json", `["type"]`, "not a JSON object"},
		{"not json", 400, "application/problem+json", `oops`, "not a JSON object"},
		{"no type", 400, "application/problem+json", `{"title":"X","status":400}`, `"type"`},
		{"numeric type", 400, "application/problem+json", `{"type":4,"title":"X","status":400}`, `"type"`},
		{"type with space", 400, "application/problem+json", `{"type":"a b","title":"X","status":400}`, "URI reference"},
		{"no title", 400, "application/problem+json", `{"type":"t","status":400}`, `"title"`},
		{"empty title", 400, "application/problem+json", `{"type":"t","title":" ","status":400}`, `"title"`},
		{"no status", 400, "application/problem+json", `{"type":"t","title":"X"}`, `"status"`},
		{"string status", 400, "application/problem+json", `{"type":"t","title":"X","status":"400"}`, `"status"`},
		{"wrong status", 422, "application/problem+json", `{"type":"t","title":"X","status":400}`, "differs"},
		{"fractional status", 400, "application/problem+json", `{"type":"t","title":"X","status":400.5}`, "differs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := problemDefect(problemExchange(tt.status, tt.contentType, tt.body))
			if tt.want == "" {
				assert.Empty(t, got)
			} else {
				assert.Contains(t, got, tt.want)
			}
		})
	}
}

func TestRetryAfterValid(t *testing.T) {
	t.Parallel()
	tests := map[string]bool{
		"1":                                 true,
		"0":                                 true,
		" 30 ":                              true,
		"Wed, 21 Oct 2015 07:28:00 GMT":     true,
		"Wednesday, 21-Oct-15 07:28:00 GMT": true,
		"":                                  false,
		"-1":                                false,
		"soon":                              false,
		"1.5":                               false,
	}
	for value, want := range tests {
		e := exchange{header: http.Header{}}
		if value != "" {
			e.header.Set("Retry-After", value)
		}
		assert.Equal(t, want, e.retryAfterValid(), "Retry-After %q", value)
	}
}

func TestDefaultResourceID(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "pay_1", defaultResourceID([]byte(`{"id":"pay_1","amount":1}`)))
	assert.Equal(t, "42", defaultResourceID([]byte(`{"id":42}`)))
	noID := defaultResourceID([]byte(`{"ok":true}`))
	assert.Equal(t, noID, defaultResourceID([]byte(`{"ok":true}`)), "equal bodies are one resource")
	assert.NotEqual(t, noID, defaultResourceID([]byte(`{"ok":false}`)))
	assert.NotEqual(t, defaultResourceID([]byte(`{"id":null,"a":1}`)), defaultResourceID([]byte(`{"id":null,"a":2}`)))
	assert.NotEmpty(t, defaultResourceID(nil))
}

// FuzzProblemDefect feeds arbitrary bodies to the problem validator: it
// must never panic, and whatever it accepts must carry the three members.
func FuzzProblemDefect(f *testing.F) {
	for _, seed := range []string{
		`{"type":"https://example.com/p/x","title":"X","status":400}`,
		`{"type":"t","title":"X","status":400.0}`,
		`{"type":null,"title":null,"status":null}`,
		`{"status":1e400}`,
		`{"type":"t","title":"X","status":-400}`,
		`[]`, `""`, `null`, ``, `{`, "\xff",
	} {
		f.Add(400, seed)
	}
	f.Fuzz(func(t *testing.T, status int, body string) {
		e := problemExchange(status, "application/problem+json", body)
		if problemDefect(e) != "" {
			return
		}
		var doc problemDoc
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatalf("accepted a body that is not JSON: %q", body)
		}
		if len(doc.Type) == 0 || len(doc.Title) == 0 || len(doc.Status) == 0 {
			t.Fatalf("accepted a problem without type, title or status: %q", body)
		}
	})
}
