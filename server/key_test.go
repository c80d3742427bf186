package server_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/server"
)

// quoteKey writes key as an RFC 8941 String, the draft's quoted form.
func quoteKey(key string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
}

func TestParseKeyAccepts(t *testing.T) {
	t.Parallel()
	longest := strings.Repeat("k", server.MaxKeyLength)
	for _, tc := range []struct{ value, want string }{
		{"6f1c0e6a-3d8b-4b8e-9a51-7f0c2d1e9b44", "6f1c0e6a-3d8b-4b8e-9a51-7f0c2d1e9b44"},
		{`"6f1c0e6a-3d8b-4b8e-9a51-7f0c2d1e9b44"`, "6f1c0e6a-3d8b-4b8e-9a51-7f0c2d1e9b44"},
		{"  padded\t", "padded"},
		{` "padded" `, "padded"},
		{`"with-\"escaped\"-quotes-and-\\"`, `with-"escaped"-quotes-and-\`},
		{`in"side`, `in"side`},
		{"!~", "!~"},
		// A comma is visible ASCII: the field is an Item, not a List, so
		// no intermediary may merge two lines into this one.
		{"a,b", "a,b"},
		{"x", "x"},
		{longest, longest},
		{quoteKey(longest), longest},
		// draft-07 §2.1: the key is an RFC 8941 String, which may hold
		// spaces, in an Item, which may carry parameters (ignored).
		{`"a b"`, "a b"},
		{`" a "`, " a "},
		{`"   "`, "   "},
		{`"abc";foo=1`, "abc"},
		{`"abc";foo`, "abc"},
		{`"abc"; foo=1;bar="x;y";baz=?0;t=tok/en:1;n=-1.5;b=:aGk=:;*s`, "abc"},
	} {
		got, err := server.ParseKey([]string{tc.value})
		if assert.NoError(t, err, "value %q", tc.value) {
			assert.Equal(t, tc.want, got, "value %q", tc.value)
		}
	}
}

func TestParseKeyRejects(t *testing.T) {
	t.Parallel()
	_, err := server.ParseKey(nil)
	assert.ErrorIs(t, err, server.ErrMissingKey)
	_, err = server.ParseKey([]string{})
	assert.ErrorIs(t, err, server.ErrMissingKey)

	for name, values := range map[string][]string{
		"two values":        {"a", "b"},
		"two equal values":  {"a", "a"},
		"empty":             {""},
		"blank":             {" \t "},
		"empty quoted":      {`""`},
		"too long":          {strings.Repeat("k", server.MaxKeyLength+1)},
		"too long quoted":   {quoteKey(strings.Repeat("k", server.MaxKeyLength+1))},
		"inner space":       {"a b"},
		"tab":               {"a\tb"},
		"DEL":               {"a\x7f"},
		"NUL":               {"a\x00"},
		"UTF-8":             {"naïve"},
		"UTF-8 in quotes":   {`"naïve"`},
		"unclosed quote":    {`"abc`},
		"lone quote":        {`"`},
		"escape at the end": {`"abc\`},
		"unknown escape":    {`"a\nb"`},
		"after the quote":   {`"abc"x`},
		"two quoted":        {`"a", "b"`},
		"two lines merged":  {"a, b"},
		"upper-case param":  {`"abc";Foo=1`},
		"param without key": {`"abc";=1`},
		"empty param value": {`"abc";foo=`},
		"bad param value":   {`"abc";foo=@1`},
		"bad boolean":       {`"abc";foo=?2`},
		"long integer":      {`"abc";n=1234567890123456`},
		"long fraction":     {`"abc";n=1.1234`},
		"unclosed bytes":    {`"abc";b=:aGk=`},
		"unclosed string":   {`"abc";s="x`},
		"space before semi": {`"abc" ;foo=1`},
		"list of strings":   {`"abc";a=1, "def"`},
	} {
		_, err := server.ParseKey(values)
		require.Error(t, err, name)
		assert.ErrorIs(t, err, server.ErrInvalidKey, name)
		assert.NotEqual(t, server.ErrInvalidKey.Error(), err.Error(), "%s: the error carries a detail", name)
	}
}

func FuzzParseKey(f *testing.F) {
	for _, seed := range []string{
		"6f1c0e6a-3d8b-4b8e-9a51-7f0c2d1e9b44", `"6f1c"`, `"a\"b\\c"`, `in"side`, "", `""`, " x ",
		`"`, `"\`, `"\x"`, `"abc"x`, "a b", "\x00", "\x7f", "naïve", strings.Repeat("k", 256),
		`"a b"`, `"abc";foo=1`, `"abc";a="b";c=?1;d=:YQ==:;e=1.5`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		key, err := server.ParseKey([]string{value})
		if err != nil {
			if !assert.ErrorIs(t, err, server.ErrInvalidKey) {
				t.FailNow()
			}
			return
		}
		require.NotEmpty(t, key)
		require.LessOrEqual(t, len(key), server.MaxKeyLength)
		for i := 0; i < len(key); i++ {
			require.True(t, key[i] >= 0x20 && key[i] <= 0x7e, "byte 0x%02x accepted", key[i])
		}
		if strings.TrimLeft(value, " \t")[0] != '"' {
			require.NotContains(t, key, " ", "a bare key never holds a space")
		}

		quoted, err := server.ParseKey([]string{quoteKey(key)})
		require.NoError(t, err, "the quoted form of an accepted key must parse")
		require.Equal(t, key, quoted)
		if !strings.HasPrefix(key, `"`) && !strings.Contains(key, " ") { // a leading quote starts the quoted form
			bare, err := server.ParseKey([]string{key})
			require.NoError(t, err)
			require.Equal(t, key, bare)
		}
	})
}
