package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/idemkit/idem/internal/gqldoc"
)

// GraphQLKeyError says why a request body has no place for an
// @idempotent(key:) directive, or holds one that cannot be read. It
// matches ErrNoKeyPlace.
type GraphQLKeyError struct {
	// Reason says what is wrong with the body.
	Reason string
}

func (e *GraphQLKeyError) Error() string {
	return "GraphQL idempotency key: " + e.Reason
}

// Is makes the error match ErrNoKeyPlace.
func (e *GraphQLKeyError) Is(target error) bool { return target == ErrNoKeyPlace }

func graphQLKeyError(format string, args ...any) error {
	return &GraphQLKeyError{Reason: fmt.Sprintf(format, args...)}
}

// idempotentDirective is the directive that carries the key.
const idempotentDirective = "idempotent"

// PlaceGraphQLKey writes key into a GraphQL request body (a JSON object
// whose "query" member is the document) as an @idempotent(key: "…")
// directive on the mutation's field, right after the field's arguments,
// and changes no other byte of the body. The document must hold one
// operation, a mutation with one field, that carries no @idempotent
// directive yet (SplitGraphQLKey finds one that does).
func PlaceGraphQLKey(body []byte, key string) ([]byte, error) {
	q, err := readGraphQLQuery(body)
	if err != nil {
		return nil, err
	}
	f, err := mutationField(q.text)
	if err != nil {
		return nil, err
	}
	if directiveOf(f) != nil {
		return nil, graphQLKeyError("the %s field already carries an @%s directive", f.Name, idempotentDirective)
	}
	at, ok := q.rawOffset(f.ArgumentsEnd)
	if !ok {
		return nil, graphQLKeyError("cannot map the document's offset %d into the JSON body", f.ArgumentsEnd)
	}
	insert := jsonStringContent(directiveText(key))
	out := make([]byte, 0, len(body)+len(insert))
	out = append(out, body[:q.start+at]...)
	out = append(out, insert...)
	return append(out, body[q.start+at:]...), nil
}

// SplitGraphQLKey reads the key of the @idempotent directive on a GraphQL
// request's mutation field: the key, the body without the directive, and
// whether there is one. The key must be a string literal (a $variable is
// refused: the key would not be in the document). A directive
// PlaceGraphQLKey wrote comes out with the space before it, so rest is
// then the body PlaceGraphQLKey was given.
func SplitGraphQLKey(body []byte) (key string, rest []byte, found bool, err error) {
	q, err := readGraphQLQuery(body)
	if err != nil {
		return "", nil, false, err
	}
	f, err := mutationField(q.text)
	if err != nil {
		return "", nil, false, err
	}
	d := directiveOf(f)
	if d == nil {
		return "", body, false, nil
	}
	if len(d.Arguments) != 1 || d.Arguments[0].Name != "key" {
		return "", nil, false, graphQLKeyError("@%s takes one argument, key", idempotentDirective)
	}
	v := d.Arguments[0].Value
	switch v.Kind {
	case gqldoc.StringValue:
	case gqldoc.VariableValue:
		return "", nil, false, graphQLKeyError("@%s(key: $%s) takes the key from a variable; write the key into the document as a string, or leave the directive out and let the client place it", idempotentDirective, v.Text)
	default:
		return "", nil, false, graphQLKeyError("@%s(key:) is not a string", idempotentDirective)
	}
	from := d.Start
	if from == f.ArgumentsEnd+1 && q.text[f.ArgumentsEnd] == ' ' {
		from = f.ArgumentsEnd // the space PlaceGraphQLKey writes before it
	}
	a, ok1 := q.rawOffset(from)
	b, ok2 := q.rawOffset(d.End)
	if !ok1 || !ok2 {
		return "", nil, false, graphQLKeyError("cannot map the directive's offsets into the JSON body")
	}
	rest = make([]byte, 0, len(body))
	rest = append(rest, body[:q.start+a]...)
	rest = append(rest, body[q.start+b:]...)
	return v.Text, rest, true, nil
}

// directiveText is the directive PlaceGraphQLKey writes, with the space
// before it: key as a GraphQL string, where " and \ are escaped.
func directiveText(key string) string {
	var b bytes.Buffer
	b.WriteString(" @" + idempotentDirective + `(key: "`)
	for i := 0; i < len(key); i++ {
		if key[i] == '"' || key[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(key[i])
	}
	b.WriteString(`")`)
	return b.String()
}

// jsonStringContent is s as it stands inside a JSON string, quotes left
// off.
func jsonStringContent(s string) []byte {
	enc, _ := json.Marshal(s) // a string always marshals
	return enc[1 : len(enc)-1]
}

// graphQLQuery is the "query" member of a GraphQL request body: its
// decoded text, its raw JSON string token and where that token starts.
type graphQLQuery struct {
	text  string
	raw   []byte
	start int
}

// readGraphQLQuery finds the one "query" member of a JSON object body.
func readGraphQLQuery(body []byte) (graphQLQuery, error) {
	if !utf8.Valid(body) {
		return graphQLQuery{}, graphQLKeyError("the body is not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return graphQLQuery{}, graphQLKeyError("the body is not a GraphQL request (a JSON object with a query member)")
	}
	var q graphQLQuery
	found := false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return graphQLQuery{}, graphQLKeyError("the body is not a JSON object: %v", err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return graphQLQuery{}, graphQLKeyError("the body is not a JSON object: %v", err)
		}
		if t != "query" {
			continue
		}
		if found {
			return graphQLQuery{}, graphQLKeyError("the body has two query members")
		}
		found = true
		if err := json.Unmarshal(raw, &q.text); err != nil {
			return graphQLQuery{}, graphQLKeyError("the query member is not a string")
		}
		q.raw = raw
		q.start = int(dec.InputOffset()) - len(raw)
	}
	if _, err := dec.Token(); err != nil {
		return graphQLQuery{}, graphQLKeyError("the body is not a JSON object: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return graphQLQuery{}, graphQLKeyError("the body has data after its JSON object")
	}
	if !found {
		return graphQLQuery{}, graphQLKeyError("the body is not a GraphQL request: it has no query member")
	}
	return q, nil
}

// rawOffset maps an offset in the decoded query text to one in the raw
// JSON string token (quote included); false when it falls inside an
// escape.
func (q graphQLQuery) rawOffset(off int) (int, bool) {
	i, n := 1, 0
	for n < off {
		if i >= len(q.raw)-1 {
			return 0, false
		}
		if q.raw[i] != '\\' {
			n++
			i++
			continue
		}
		if q.raw[i+1] != 'u' {
			n++
			i += 2
			continue
		}
		r := hex4(q.raw[i+2 : i+6])
		i += 6
		if utf16.IsSurrogate(r) && i+6 <= len(q.raw) && q.raw[i] == '\\' && q.raw[i+1] == 'u' {
			if pair := utf16.DecodeRune(r, hex4(q.raw[i+2:i+6])); pair != utf8.RuneError {
				r = pair
				i += 6
			}
		}
		if utf16.IsSurrogate(r) {
			r = utf8.RuneError // what encoding/json decodes a lone surrogate to
		}
		n += utf8.RuneLen(r)
	}
	return i, n == off
}

func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b), 16, 32) // valid: the body decoded
	return rune(n)
}

// mutationField is the one field of the one mutation of a document.
func mutationField(query string) (*gqldoc.Field, error) {
	doc, err := gqldoc.Parse(query)
	if err != nil {
		return nil, graphQLKeyError("the query does not parse: %v", err)
	}
	if len(doc.Operations) != 1 {
		return nil, graphQLKeyError("the document holds %d operations; the key goes on the field of its only mutation", len(doc.Operations))
	}
	op := doc.Operations[0]
	if op.Type != "mutation" {
		return nil, graphQLKeyError("the operation is a %s, not a mutation", op.Type)
	}
	if len(op.Selections) != 1 {
		return nil, graphQLKeyError("the mutation selects %d fields; one key covers one mutation field", len(op.Selections))
	}
	if op.Selections[0].Field == nil {
		return nil, graphQLKeyError("the mutation selects a fragment; write its field in the mutation itself")
	}
	return op.Selections[0].Field, nil
}

// directiveOf is f's @idempotent directive, nil if it has none.
func directiveOf(f *gqldoc.Field) *gqldoc.Directive {
	for i := range f.Directives {
		if f.Directives[i].Name == idempotentDirective {
			return &f.Directives[i]
		}
	}
	return nil
}
