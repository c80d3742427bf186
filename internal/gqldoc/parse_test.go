package gqldoc

import (
	"errors"
	"testing"
)

func TestParseGivesFieldOffsets(t *testing.T) {
	src := `# comment
mutation M($input: InventoryAdjustQuantitiesInput!, $n: [Int!]! = [1, 2]) {
  a: inventoryAdjustQuantities(input: $input, x: {s: "q\"(", b: """blk""", f: -1.5e3, e: ENUM, n: null, t: true}) @idempotent(key: "k") @other {
    inventoryAdjustmentGroup { id ...F ... on X { y } }
  }
}
fragment F on InventoryAdjustmentGroup { createdAt }`
	doc, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Operations) != 1 || doc.Operations[0].Type != "mutation" || doc.Operations[0].Name != "M" || doc.Fragments["F"] == nil {
		t.Fatalf("doc = %+v", doc)
	}
	f := doc.Operations[0].Selections[0].Field
	if f.Alias != "a" || f.Name != "inventoryAdjustQuantities" || f.ResponseKey() != "a" {
		t.Errorf("field %q alias %q", f.Name, f.Alias)
	}
	if got := src[f.ArgumentsEnd-6 : f.ArgumentsEnd]; got != "true})" {
		t.Errorf("ArgumentsEnd at %q", got)
	}
	if len(f.Directives) != 2 || src[f.Directives[0].Start:f.Directives[0].End] != `@idempotent(key: "k")` || f.Directives[1].Name != "other" {
		t.Errorf("directives %+v", f.Directives)
	}
	x := f.Arguments[1].Value
	if x.Kind != ObjectValue || x.Fields[0].Value.Text != `q"(` || x.Fields[1].Value.Text != "blk" || x.Fields[2].Value.Kind != FloatValue ||
		x.Fields[3].Value.Kind != EnumValue || x.Fields[4].Value.Kind != NullValue || x.Fields[5].Value.Kind != BooleanValue {
		t.Errorf("object value %+v", x)
	}
	if f.Arguments[0].Value.Kind != VariableValue || f.Arguments[0].Value.Text != "input" {
		t.Errorf("variable %+v", f.Arguments[0].Value)
	}
	sel := f.Selections[0].Field.Selections
	if sel[1].Spread != "F" || sel[2].TypeCondition != "X" {
		t.Errorf("fragments %+v %+v", sel[1], sel[2])
	}
	// A field without arguments: its directive goes right after its name.
	doc, err = Parse(`mutation{shopUpdate{id}}`)
	if err != nil {
		t.Fatal(err)
	}
	if f := doc.Operations[0].Selections[0].Field; f.ArgumentsEnd != len("mutation{shopUpdate") {
		t.Errorf("ArgumentsEnd = %d", f.ArgumentsEnd)
	}
}

func TestParseRefusesBadDocuments(t *testing.T) {
	for _, src := range []string{
		``, `mutation`, `mutation { }`, `mutation { a(`, `mutation { a(x: ) }`, `{ a(x: "unterminated) }`,
		`{ a(x: 01) }`, `{ a(x: 1.) }`, `{ a(x: 1e) }`, `{ a(x: 1x) }`, `{ a } }`, `fragment F { a }`,
		`{ a(x: "\q") }`, "{ a(x: \"line\nbreak\") }", `{ a @ }`, `mutation($x) { a }`, `{ a(x: $v) @d(k: 1) }x`,
		`{ a } fragment F on T { b } fragment F on T { c }`, `{ a(x: """open) }`, `{ . }`, `{ a(x: "\u12") }`,
	} {
		if _, err := Parse(src); err == nil {
			t.Errorf("Parse(%q) = nil error", src)
		} else if se := new(SyntaxError); !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, not a *SyntaxError", src, err)
		}
	}
}
