package keystore

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonSummary is how decodeSummary read a record's JSON before
// scanSummary: json.Unmarshal alone.
func jsonSummary(js []byte) (recordSummary, error) {
	var s recordSummary
	err := json.Unmarshal(js, &s)
	return s, err
}

// checkSummary asserts that decodeSummary reads js (stored as V1) as
// json.Unmarshal does, errors included, and that whatever scanSummary
// accepts json.Unmarshal reads the same. It returns whether scanSummary
// accepted js.
func checkSummary(t testing.TB, js []byte) bool {
	t.Helper()
	want, werr := jsonSummary(js)
	fast, ok := scanSummary(js)
	if ok && (werr != nil || !reflect.DeepEqual(fast, want)) {
		t.Fatalf("scanSummary(%q) = %+v, json.Unmarshal %+v, %v", js, fast, want, werr)
	}
	got, err := decodeSummary("k", append([]byte{recordEncodingV1}, js...))
	switch {
	case werr != nil:
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), werr.Error()) {
			t.Fatalf("decodeSummary(%q): %v, want ErrCorrupt with %v", js, err, werr)
		}
	case err != nil:
		t.Fatalf("decodeSummary(%q): %v, json.Unmarshal reads it", js, err)
	case !reflect.DeepEqual(got, want):
		t.Fatalf("decodeSummary(%q) = %+v, json.Unmarshal %+v", js, got, want)
	}
	return ok
}

// plainJSONString reports whether json.Marshal writes s without an
// escape, so scanSummary reads it itself.
func plainJSONString(s string) bool {
	return string(appendJSONString(nil, s)) == `"`+s+`"`
}

func TestSummaryRandomRecords(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	fast := 0
	for range 3000 {
		r := randRecord(rng)
		data, err := encodeRecord(r)
		if err != nil {
			continue // a time JSON cannot hold
		}
		plain := plainJSONString(r.Name) && plainJSONString(string(r.State))
		// As stored now (V2, UTC times) and as an earlier build stored
		// it (V1, times in their zones).
		js := data[1+recordChecksumSize:]
		assert.Equal(t, plain, checkSummary(t, js), "%q", js)
		if v1, err := json.Marshal(r); err == nil { // not with a zone of 24 hours
			assert.Equal(t, plain, checkSummary(t, v1), "%q", v1)
		}
		sum, err := decodeSummary(r.Key, data)
		require.NoError(t, err)
		want, err := jsonSummary(js)
		require.NoError(t, err)
		assert.Equal(t, want, sum)
		if plain {
			fast++
		}
	}
	assert.Greater(t, fast, 500, "the scanner, not only json.Unmarshal, is compared")
}

func TestSummaryOddJSON(t *testing.T) {
	t.Parallel()
	const at = `"2025-01-02T03:04:05.000000006+01:00"`
	fast := map[string]string{
		"whole":      `{"key":"k","name":"n","state":"pending","created_at":` + at + `,"updated_at":` + at + `,"purged_at":` + at + `}`,
		"empty":      `{}`,
		"spaces":     " \t\n\r{ \"name\" : \"a\" , \"state\"\n:\"x\" } \r\n",
		"skipped":    `{"state":"failed","x":[1,-0.5e+3,0,1E9,-0,{"y":[true,false,null,"\"\\\/\b\f\n\r\t\u00e9\uD800"]},[],{}],"created_at":` + at + `}`,
		"bad utf8":   "{\"x\":\"\xff\",\"name\":\"\u00e9\u2028\"}",
		"other case": `{"Key":1,"KEY":[]}`,
		"nesting":    `{"x":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
		"new state":  `{"state":"someday"}`,
	}
	slow := map[string]string{
		"folded":         `{"name":"a","NAME":"b"}`,
		"folded only":    `{"Name":"x","STATE":"pending"}`,
		"long s":         `{"ſtate":"pending"}`,
		"twice":          `{"name":"a","name":"b"}`,
		"twice time":     `{"created_at":` + at + `,"created_at":null}`,
		"escaped name":   `{"name":"a\u0062"}`,
		"escaped key":    `{"n\u0061me":"a"}`,
		"null name":      `{"name":null}`,
		"null time":      `{"purged_at":null}`,
		"number name":    `{"name":5}`,
		"object time":    `{"updated_at":{}}`,
		"bad time":       `{"created_at":"2025"}`,
		"escaped time":   `{"created_at":"2025-01-02T03:04:05\u005a"}`,
		"invalid name":   "{\"name\":\"\xff\"}",
		"null":           `null`,
		"array":          `[]`,
		"string":         `"x"`,
		"number":         `5`,
		"nothing":        ``,
		"open":           `{`,
		"unclosed":       `{"name":"a"`,
		"leading zero":   `{"x":01}`,
		"bare point":     `{"x":1.}`,
		"bare minus":     `{"x":-}`,
		"bare exponent":  `{"x":1e}`,
		"plus":           `{"x":+1}`,
		"trailing comma": `{"x":[1,]}`,
		"object comma":   `{"x":{"a":1,}}`,
		"top comma":      `{"x":1,}`,
		"short literal":  `{"x":tru}`,
		"control char":   "{\"x\":\"\x01\"}",
		"bad escape":     `{"x":"\q"}`,
		"short unicode":  `{"x":"\u12"}`,
		"garbage after":  `{"a":1}x`,
		"two values":     `{"a":1} {}`,
		"no colon":       `{"a" 1}`,
		"bare key":       `{a:1}`,
		"missing value":  `{"created_at":` + at + `,"x":}`,
		"bom":            "\ufeff{}",
		"deep":           `{"x":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`,
		"too deep":       `{"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
	}
	for name, js := range fast {
		assert.True(t, checkSummary(t, []byte(js)), "%s: scanSummary reads it", name)
	}
	for name, js := range slow {
		assert.False(t, checkSummary(t, []byte(js)), "%s: left to json.Unmarshal", name)
	}
}

// FuzzScanSummary compares decodeSummary with json.Unmarshal on arbitrary
// bytes: the same summary, or both errors.
func FuzzScanSummary(f *testing.F) {
	for _, r := range []*Record{fullRecord(), pendingRecord(1), addedFieldsRecord(2)} {
		data, err := encodeRecord(r)
		require.NoError(f, err)
		f.Add(data[1+recordChecksumSize:])
	}
	for _, s := range []string{`{"name":"a","NAME":"b"}`, `{"x":[1,-0.5e+3,{"y":"\u00e9"}]}`, `null`, `{"x":01}`, "{\"x\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		checkSummary(t, js)
	})
}
