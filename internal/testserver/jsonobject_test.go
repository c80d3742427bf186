package testserver

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

// FuzzScanObjectMatchesTheDecoder: on every valid JSON body, the one-pass
// scan finds the members, and refuses names, exactly as encoding/json's
// token decoder does.
func FuzzScanObjectMatchesTheDecoder(f *testing.F) {
	for _, seed := range []string{
		`{"amount":1000,"currency":"EUR","reference":"x"}`,
		` { "amount" : -1.5e3 , "reference" : "a\"b\\u00e9" } `,
		`{"amount":{"a":[1,"]",{"}":null}]},"currency":[true,false]}`,
		`{}`, `[]`, `"s"`, `{"tip":1}`, `{"amount":1,"amount":2}`, `{"am\u006fun\u0074":1}`,
		"{\"reference\":\"\xff\"}",
	} {
		f.Add([]byte(seed))
	}
	allowed := []string{"amount", "currency", "reference"}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			return
		}
		want, wantErr := decodeObjectTokens(body, allowed)
		got, gotErr, ok := scanObject(body, allowed)
		if !ok {
			assert.NotNil(t, wantErr, "not an object: the decoder refuses it too")
			return
		}
		if wantErr != nil {
			if assert.NotNil(t, gotErr) {
				assert.Equal(t, wantErr.detail, gotErr.detail)
			}
			return
		}
		assert.Nil(t, gotErr)
		assert.Equal(t, len(want), len(got))
		for name, raw := range want {
			assert.JSONEq(t, string(raw), string(got[name]), "member %q", name)
			ws, werr := decodeString(name, raw)
			gs, gerr := decodeString(name, got[name])
			assert.Equal(t, werr == nil, gerr == nil)
			assert.Equal(t, ws, gs)
		}
	})
}
