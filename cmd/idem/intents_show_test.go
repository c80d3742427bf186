package main

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShow_ByKeyAndByName(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	in := p.succeeded[0]

	byKey, stderr, err := runIntentsCLI(t, nil, "show", "--keystore", p.path, in.Key)
	require.NoError(t, err, stderr)
	byName, _, err := runIntentsCLI(t, nil, "show", "--keystore", p.path, in.Name)
	require.NoError(t, err)
	assert.Equal(t, byKey, byName)

	assert.Regexp(t, `(?m)^Key:\s+`+in.Key+`$`, byKey)
	assert.Regexp(t, `(?m)^Name:\s+order-0/payment$`, byKey)
	assert.Regexp(t, `(?m)^State:\s+succeeded$`, byKey)
	assert.Regexp(t, `(?m)^Request:\s+POST `+p.srv.URL+`/v1/payments$`, byKey)
	assert.Regexp(t, `(?m)^Fingerprint:\s+`+in.Fingerprint+`$`, byKey)
	assert.Contains(t, byKey, "  Content-Type: application/json")
	assert.Contains(t, byKey, `"reference": "order-0"`, "a printable request body is shown as text")
	assert.Contains(t, byKey, "Response 201 Created")
	assert.Contains(t, byKey, `"id":"pay_`, "the stored answer's body")
	assert.NotContains(t, byKey, testToken)
	assert.NotContains(t, byKey, "Authorization")
}

func TestShow_PendingIntentHasNoResponse(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)

	stdout, _, err := runIntentsCLI(t, nil, "show", "--keystore", p.path, p.pending[0].Key)
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^State:\s+pending$`, stdout)
	assert.Regexp(t, `(?m)^Last error:\s+.*503`, stdout)
	assert.Contains(t, stdout, "\nResponse\n  none stored yet\n")
}

func TestShow_JSONWithBinaryBodyAsBase64(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	in := p.failed[0]

	stdout, _, err := runIntentsCLI(t, nil, "show", "--keystore", p.path, "--json", in.Name)
	require.NoError(t, err)
	var d intentDetail
	require.NoError(t, json.Unmarshal([]byte(stdout), &d), stdout)
	assert.Equal(t, in.Key, d.Key)
	assert.Equal(t, "failed", string(d.State))
	require.NotNil(t, d.Body)
	assert.Empty(t, d.Body.Text)
	assert.Equal(t, len(p.binaryBody), d.Body.Size)
	raw, err := base64.StdEncoding.DecodeString(d.Body.Base64)
	require.NoError(t, err)
	assert.Equal(t, p.binaryBody, raw)
	require.NotNil(t, d.Response, "the server's 4xx is stored")
	assert.GreaterOrEqual(t, d.Response.Status, 400)
	assert.Less(t, d.Response.Status, 500)
	assert.Equal(t, d.Response.Status, d.Status)

	text, _, err := runIntentsCLI(t, nil, "show", "--keystore", p.path, in.Key)
	require.NoError(t, err)
	assert.Contains(t, text, "body: 5 bytes, not text; base64:")
	assert.Contains(t, text, d.Body.Base64)
}

func TestShow_UnknownAndMissingArgumentsAreOneLine(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)

	_, stderr, err := runIntentsCLI(t, nil, "show", "--keystore", p.path, "no-such-intent")
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stderr, `no intent with key or name "no-such-intent" in `+p.path)

	for _, args := range [][]string{{}, {"a", "b"}, {""}} {
		_, stderr, err := runIntentsCLI(t, nil, append([]string{"show", "--keystore", p.path}, args...)...)
		requireOneLineError(t, stderr, err)
	}
}

func TestPrintable(t *testing.T) {
	t.Parallel()
	assert.True(t, printable([]byte("{\"a\": 1}\r\n\tok é")))
	assert.False(t, printable([]byte{0xff, 0xfe}))
	assert.False(t, printable([]byte("nul\x00byte")))
	assert.False(t, printable([]byte("bell\a")))
}

// FuzzBodyView checks that show never loses or alters a body: text is the
// body itself, base64 decodes back to it, and the size is its length.
func FuzzBodyView(f *testing.F) {
	for _, seed := range [][]byte{
		nil, []byte(`{"amount": 1000}`), {0x00, 0xff}, []byte("line\r\nnext\t"), []byte("\xe2\x82"), []byte("é\u200b"), []byte("\x7f"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v := newBodyView(b)
		if len(b) == 0 {
			assert.Nil(t, v)
			return
		}
		require.NotNil(t, v)
		assert.Equal(t, len(b), v.Size)
		if v.Base64 == "" {
			assert.Equal(t, string(b), v.Text)
			assert.True(t, printable(b))
			return
		}
		assert.Empty(t, v.Text)
		raw, err := base64.StdEncoding.DecodeString(v.Base64)
		require.NoError(t, err)
		assert.Equal(t, b, raw)
	})
}
