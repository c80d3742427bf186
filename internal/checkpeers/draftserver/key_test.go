package draftserver

import "testing"

func TestParseKey(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		`"8e03978e-40d5-43e8-bc93-6894a57f9324"`: "8e03978e-40d5-43e8-bc93-6894a57f9324",
		`"clkyoesmbgybucifusbbtdsbohtyuuwz"`:     "clkyoesmbgybucifusbbtdsbohtyuuwz",
		`  "a b"  `:                              "a b",
		`"q\"uote\\d"`:                           `q"uote\d`,
		`"k";v=1;x="y";*z;f=?0`:                  "k",
		`""`:                                     "",
	}
	for in, want := range good {
		got, err := parseKey([]string{in})
		if err != nil || got != want {
			t.Errorf("parseKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := [][]string{
		nil,
		{""},
		{"8e03978e-40d5-43e8-bc93-6894a57f9324"}, // bare: no String
		{`"unterminated`},
		{`"bad \x escape"`},
		{"\"caf\xc3\xa9\""}, // not printable ASCII
		{`"a"`, `"b"`},      // two lines join as a List, no Item
		{`"a" trailing`},
		{`"a";V=1`}, // parameter keys are lower case
	}
	for _, in := range bad {
		if got, err := parseKey(in); err == nil {
			t.Errorf("parseKey(%q) = %q, want an error", in, got)
		}
	}
}
