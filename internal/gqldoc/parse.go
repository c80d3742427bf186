package gqldoc

import "fmt"

// Document is a parsed executable document.
type Document struct {
	// Operations are its operation definitions, in order.
	Operations []*Operation
	// Fragments are its fragment definitions by name.
	Fragments map[string]*Fragment
}

// Operation is one operation definition.
type Operation struct {
	// Type is "query", "mutation" or "subscription".
	Type string
	// Name is the operation's name, "" when anonymous.
	Name string
	// Selections is its selection set.
	Selections []*Selection
}

// Fragment is one fragment definition.
type Fragment struct {
	Name       string
	TypeName   string
	Selections []*Selection
}

// Selection is a field, a fragment spread (Spread set) or an inline
// fragment (Inline set).
type Selection struct {
	// Field is set for a field.
	Field *Field
	// Spread names the fragment of a fragment spread.
	Spread string
	// Inline is the selection set of an inline fragment.
	Inline []*Selection
	// TypeCondition is an inline fragment's type condition, "" if none.
	TypeCondition string
}

// Field is one field of a selection set, with the offsets a caller needs
// to edit the document around it.
type Field struct {
	// Alias is the field's alias, "" if none.
	Alias string
	// Name is the field's name.
	Name string
	// Arguments are its arguments, in order.
	Arguments []Argument
	// Directives are its directives, in order.
	Directives []Directive
	// Selections is its selection set, nil if it has none.
	Selections []*Selection
	// ArgumentsEnd is the offset just after the field's arguments (after
	// its name when it has none): where a directive of its own goes.
	ArgumentsEnd int
}

// ResponseKey is the key of the field in a response: its alias, or its
// name.
func (f *Field) ResponseKey() string {
	if f.Alias != "" {
		return f.Alias
	}
	return f.Name
}

// Argument is one name: value pair.
type Argument struct {
	Name  string
	Value Value
}

// Directive is one @name(arguments) of a field.
type Directive struct {
	Name      string
	Arguments []Argument
	// Start and End delimit the directive in the source, from its @ to
	// just after its last byte.
	Start, End int
}

// ValueKind is the kind of a Value.
type ValueKind int

// The kinds of values.
const (
	VariableValue ValueKind = iota
	IntValue
	FloatValue
	StringValue
	BooleanValue
	NullValue
	EnumValue
	ListValue
	ObjectValue
)

// Value is one input value as written in the document.
type Value struct {
	Kind ValueKind
	// Text is a variable's name (without $), a number's or enum's or
	// boolean's text, or a string's decoded value.
	Text string
	// List holds a list's items.
	List []Value
	// Fields holds an object's fields, in order.
	Fields []Argument
	// Start and End delimit the value in the source.
	Start, End int
}

// Parse reads src as an executable document.
func Parse(src string) (*Document, error) {
	p := &parser{lex: lexer{src: src}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	doc := &Document{Fragments: map[string]*Fragment{}}
	for p.tok.kind != tokEOF {
		switch {
		case p.isPunct("{"):
			sel, err := p.selectionSet()
			if err != nil {
				return nil, err
			}
			doc.Operations = append(doc.Operations, &Operation{Type: "query", Selections: sel})
		case p.tok.kind == tokName && (p.tok.text == "query" || p.tok.text == "mutation" || p.tok.text == "subscription"):
			op, err := p.operation()
			if err != nil {
				return nil, err
			}
			doc.Operations = append(doc.Operations, op)
		case p.tok.kind == tokName && p.tok.text == "fragment":
			f, err := p.fragment()
			if err != nil {
				return nil, err
			}
			if doc.Fragments[f.Name] != nil {
				return nil, p.errAt(p.tok.start, "fragment %q defined twice", f.Name)
			}
			doc.Fragments[f.Name] = f
		default:
			return nil, p.unexpected("an operation or a fragment")
		}
	}
	if len(doc.Operations) == 0 {
		return nil, p.errAt(0, "the document has no operation")
	}
	return doc, nil
}

// parser is a recursive-descent parser over the lexer, one token ahead.
type parser struct {
	lex lexer
	tok token
	// prevEnd is where the token before tok ends.
	prevEnd int
}

func (p *parser) advance() error {
	p.prevEnd = p.tok.end
	t, err := p.lex.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) errAt(off int, format string, args ...any) error {
	return &SyntaxError{Offset: off, Reason: fmt.Sprintf(format, args...)}
}

func (p *parser) unexpected(want string) error {
	if p.tok.kind == tokEOF {
		return p.errAt(p.tok.start, "want %s, the document ends", want)
	}
	return p.errAt(p.tok.start, "want %s, got %q", want, p.lex.src[p.tok.start:p.tok.end])
}

func (p *parser) isPunct(s string) bool { return p.tok.kind == tokPunct && p.tok.text == s }

func (p *parser) expectPunct(s string) error {
	if !p.isPunct(s) {
		return p.unexpected(fmt.Sprintf("%q", s))
	}
	return p.advance()
}

func (p *parser) name() (string, error) {
	if p.tok.kind != tokName {
		return "", p.unexpected("a name")
	}
	n := p.tok.text
	return n, p.advance()
}

func (p *parser) operation() (*Operation, error) {
	op := &Operation{Type: p.tok.text}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.kind == tokName {
		op.Name = p.tok.text
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	if p.isPunct("(") {
		if err := p.variableDefinitions(); err != nil {
			return nil, err
		}
	}
	if _, err := p.directives(true); err != nil {
		return nil, err
	}
	sel, err := p.selectionSet()
	if err != nil {
		return nil, err
	}
	op.Selections = sel
	return op, nil
}

func (p *parser) variableDefinitions() error {
	if err := p.advance(); err != nil { // (
		return err
	}
	for !p.isPunct(")") {
		if err := p.expectPunct("$"); err != nil {
			return err
		}
		if _, err := p.name(); err != nil {
			return err
		}
		if err := p.expectPunct(":"); err != nil {
			return err
		}
		if err := p.typeRef(); err != nil {
			return err
		}
		if p.isPunct("=") {
			if err := p.advance(); err != nil {
				return err
			}
			if _, err := p.value(true); err != nil {
				return err
			}
		}
		if _, err := p.directives(true); err != nil {
			return err
		}
	}
	return p.advance()
}

func (p *parser) typeRef() error {
	if p.isPunct("[") {
		if err := p.advance(); err != nil {
			return err
		}
		if err := p.typeRef(); err != nil {
			return err
		}
		if err := p.expectPunct("]"); err != nil {
			return err
		}
	} else if _, err := p.name(); err != nil {
		return err
	}
	if p.isPunct("!") {
		return p.advance()
	}
	return nil
}

func (p *parser) fragment() (*Fragment, error) {
	if err := p.advance(); err != nil { // fragment
		return nil, err
	}
	f := &Fragment{}
	var err error
	if f.Name, err = p.name(); err != nil {
		return nil, err
	}
	if p.tok.kind != tokName || p.tok.text != "on" {
		return nil, p.unexpected(`"on"`)
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if f.TypeName, err = p.name(); err != nil {
		return nil, err
	}
	if _, err := p.directives(false); err != nil {
		return nil, err
	}
	if f.Selections, err = p.selectionSet(); err != nil {
		return nil, err
	}
	return f, nil
}

func (p *parser) selectionSet() ([]*Selection, error) {
	if err := p.expectPunct("{"); err != nil {
		return nil, err
	}
	var out []*Selection
	for !p.isPunct("}") {
		s, err := p.selection()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, p.errAt(p.tok.start, "an empty selection set")
	}
	return out, p.advance()
}

func (p *parser) selection() (*Selection, error) {
	if p.isPunct("...") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == tokName && p.tok.text != "on" {
			name := p.tok.text
			if err := p.advance(); err != nil {
				return nil, err
			}
			if _, err := p.directives(false); err != nil {
				return nil, err
			}
			return &Selection{Spread: name}, nil
		}
		s := &Selection{}
		if p.tok.kind == tokName { // on
			if err := p.advance(); err != nil {
				return nil, err
			}
			var err error
			if s.TypeCondition, err = p.name(); err != nil {
				return nil, err
			}
		}
		if _, err := p.directives(false); err != nil {
			return nil, err
		}
		sel, err := p.selectionSet()
		if err != nil {
			return nil, err
		}
		s.Inline = sel
		return s, nil
	}
	f, err := p.field()
	if err != nil {
		return nil, err
	}
	return &Selection{Field: f}, nil
}

func (p *parser) field() (*Field, error) {
	f := &Field{}
	n, err := p.name()
	if err != nil {
		return nil, err
	}
	f.Name = n
	end := p.prevEnd
	if p.isPunct(":") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		f.Alias = n
		if f.Name, err = p.name(); err != nil {
			return nil, err
		}
		end = p.prevEnd
	}
	if p.isPunct("(") {
		if f.Arguments, end, err = p.arguments(false); err != nil {
			return nil, err
		}
	}
	f.ArgumentsEnd = end
	if f.Directives, err = p.directives(false); err != nil {
		return nil, err
	}
	if p.isPunct("{") {
		if f.Selections, err = p.selectionSet(); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// arguments reads ( name: value … ) and returns the offset after ")".
func (p *parser) arguments(constant bool) ([]Argument, int, error) {
	if err := p.advance(); err != nil { // (
		return nil, 0, err
	}
	var args []Argument
	for !p.isPunct(")") {
		n, err := p.name()
		if err != nil {
			return nil, 0, err
		}
		if err := p.expectPunct(":"); err != nil {
			return nil, 0, err
		}
		v, err := p.value(constant)
		if err != nil {
			return nil, 0, err
		}
		args = append(args, Argument{Name: n, Value: v})
	}
	if len(args) == 0 {
		return nil, 0, p.errAt(p.tok.start, "empty arguments")
	}
	end := p.tok.end
	return args, end, p.advance()
}

func (p *parser) directives(constant bool) ([]Directive, error) {
	var out []Directive
	for p.isPunct("@") {
		d := Directive{Start: p.tok.start}
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind != tokName {
			return nil, p.unexpected("a directive name")
		}
		d.Name, d.End = p.tok.text, p.tok.end
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.isPunct("(") {
			var err error
			if d.Arguments, d.End, err = p.arguments(constant); err != nil {
				return nil, err
			}
		}
		out = append(out, d)
	}
	return out, nil
}

func (p *parser) value(constant bool) (Value, error) {
	t := p.tok
	v := Value{Start: t.start, End: t.end, Text: t.text}
	switch {
	case t.kind == tokPunct && t.text == "$":
		if constant {
			return v, p.errAt(t.start, "a variable where a constant is needed")
		}
		if err := p.advance(); err != nil {
			return v, err
		}
		if p.tok.kind != tokName {
			return v, p.unexpected("a variable name")
		}
		v.Kind, v.Text, v.End = VariableValue, p.tok.text, p.tok.end
		return v, p.advance()
	case t.kind == tokInt:
		v.Kind = IntValue
	case t.kind == tokFloat:
		v.Kind = FloatValue
	case t.kind == tokString:
		v.Kind = StringValue
	case t.kind == tokName && (t.text == "true" || t.text == "false"):
		v.Kind = BooleanValue
	case t.kind == tokName && t.text == "null":
		v.Kind = NullValue
	case t.kind == tokName:
		v.Kind = EnumValue
	case t.kind == tokPunct && t.text == "[":
		v.Kind = ListValue
		if err := p.advance(); err != nil {
			return v, err
		}
		for !p.isPunct("]") {
			item, err := p.value(constant)
			if err != nil {
				return v, err
			}
			v.List = append(v.List, item)
		}
		v.End = p.tok.end
	case t.kind == tokPunct && t.text == "{":
		v.Kind = ObjectValue
		if err := p.advance(); err != nil {
			return v, err
		}
		for !p.isPunct("}") {
			n, err := p.name()
			if err != nil {
				return v, err
			}
			if err := p.expectPunct(":"); err != nil {
				return v, err
			}
			item, err := p.value(constant)
			if err != nil {
				return v, err
			}
			v.Fields = append(v.Fields, Argument{Name: n, Value: item})
		}
		v.End = p.tok.end
	default:
		return v, p.unexpected("a value")
	}
	return v, p.advance()
}
