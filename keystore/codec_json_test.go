package keystore

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecordJSONFields fails when Record, Response or Reconciliation gains,
// loses or retypes a field: appendRecordJSON writes each field by hand and
// must then be changed with it (and this list).
func TestRecordJSONFields(t *testing.T) {
	t.Parallel()
	fields := func(v any) []string {
		var out []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			f := rt.Field(i)
			out = append(out, f.Name+" "+f.Type.String()+" "+f.Tag.Get("json"))
		}
		return out
	}
	assert.Equal(t, []string{
		"Key string key",
		"Name string name,omitempty",
		"Method string method",
		"URL string url",
		"Header http.Header header,omitempty",
		"Body []uint8 body,omitempty",
		"Fingerprint string fingerprint",
		"State keystore.State state",
		"CreatedAt time.Time created_at",
		"UpdatedAt time.Time updated_at",
		"Attempts int attempts",
		"Response *keystore.Response response,omitempty",
		"Operation string operation,omitempty",
		"LastError string last_error,omitempty",
		"Host string host,omitempty",
		"AcceptedAt time.Time accepted_at,omitzero",
		"Principal string principal,omitempty",
		"SecretHeaders []string secret_headers,omitempty",
		"MayHaveExecuted bool may_have_executed,omitempty",
		"Reconciliations []keystore.Reconciliation reconciliations,omitempty",
		"Purged time.Time purged_at,omitzero",
	}, fields(Record{}))
	assert.Equal(t, []string{
		"Status int status",
		"Header http.Header header,omitempty",
		"Body []uint8 body,omitempty",
	}, fields(Response{}))
	assert.Equal(t, []string{
		"Outcome string outcome",
		"Source string source",
		"By string by,omitempty",
		"At time.Time at",
		"Note string note,omitempty",
	}, fields(Reconciliation{}))
}

// checkRecordJSON asserts that appendRecordJSON writes r as json.Marshal
// does, byte for byte, or declines exactly when json.Marshal fails.
func checkRecordJSON(t testing.TB, r *Record) {
	t.Helper()
	want, werr := json.Marshal(r)
	got, ok := appendRecordJSON([]byte("prefix"), r)
	if werr != nil {
		if ok {
			t.Fatalf("json.Marshal fails (%v), appendRecordJSON wrote %q", werr, got)
		}
		return
	}
	if !ok {
		t.Fatalf("appendRecordJSON declined a record json.Marshal writes as %q", want)
	}
	if string(got) != "prefix"+string(want) {
		t.Fatalf("appendRecordJSON differs from json.Marshal:\n got %q\nwant %q", got[len("prefix"):], want)
	}
}

// checkEncodeRecord asserts that encodeRecord reads back (decodeRecord)
// as the former encoding, json.Marshal of the UTC copy, reads back with
// json.Unmarshal, and leaves r alone.
func checkEncodeRecord(t testing.TB, r *Record) {
	t.Helper()
	before, trail := *r, slices.Clone(r.Reconciliations)
	data, err := encodeRecord(r)
	utc := utcRecord(r)
	want, werr := json.Marshal(&utc)
	if werr != nil {
		if err == nil {
			t.Fatalf("json.Marshal fails (%v), encodeRecord does not", werr)
		}
		return
	}
	if err != nil {
		t.Fatalf("encodeRecord: %v", err)
	}
	if !reflect.DeepEqual(before, *r) || !reflect.DeepEqual(trail, r.Reconciliations) {
		t.Fatalf("encodeRecord changed its input:\n%+v\n%+v", before, r)
	}
	if string(data[1+recordChecksumSize:]) != string(want) {
		t.Fatalf("stored JSON differs from json.Marshal:\n got %q\nwant %q", data[1+recordChecksumSize:], want)
	}
	var old Record
	if err := json.Unmarshal(want, &old); err != nil {
		t.Fatalf("json.Unmarshal: %v", err)
	}
	got, err := decodeRecord(r.Key, data)
	if old.Key != r.Key {
		// A key JSON cannot carry (invalid UTF-8) never read back.
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("decodeRecord of a key JSON changed: %v, want ErrCorrupt", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("decodeRecord: %v", err)
	}
	if !reflect.DeepEqual(got, &old) {
		t.Fatalf("decoded record differs:\n got %+v\nwant %+v", got, &old)
	}
}

// trickyText holds every kind of byte encoding/json treats apart.
const trickyText = "a<b>&c\"d\\e/f\b\f\n\r\t\x00\x1f\x7f é 😀 \u2028\u2029 \xff \xed\xa0\x80 \xe2\x80"

func TestRecordJSONTable(t *testing.T) {
	t.Parallel()
	many := http.Header{}
	for i := range 40 {
		many[fmt.Sprintf("X-H-%02d", 39-i)] = []string{fmt.Sprint(i)}
	}
	cases := map[string]*Record{
		"zero":         {},
		"full":         fullRecord(),
		"pending":      pendingRecord(7),
		"added fields": addedFieldsRecord(3),
		"tricky strings": {
			Key: trickyText, Name: trickyText, Method: trickyText, URL: trickyText,
			Fingerprint: trickyText, State: State(trickyText), Operation: trickyText,
			LastError: trickyText, Host: trickyText, Principal: trickyText,
			Header:        http.Header{trickyText: {trickyText, ""}, "": {}},
			SecretHeaders: []string{trickyText, ""},
			Response:      &Response{Header: http.Header{trickyText: nil}},
			Reconciliations: []Reconciliation{
				{Outcome: trickyText, Source: trickyText, By: trickyText, Note: trickyText},
				{},
			},
		},
		"empty, not nil": {
			Header: http.Header{}, Body: []byte{}, SecretHeaders: []string{},
			Reconciliations: []Reconciliation{}, Response: &Response{Header: http.Header{}, Body: []byte{}},
		},
		"nil header values": {Header: http.Header{"A": nil, "B": {}, "C": {""}}},
		"many header names": {Header: many, Response: &Response{Status: 200, Header: many}},
		"bodies":            {Body: []byte{0xfb, 0xff, 0x3e}, Response: &Response{Body: []byte("x")}},
		"extreme ints": {
			Attempts: math.MinInt, Response: &Response{Status: math.MaxInt},
		},
		"zoned times": {
			CreatedAt:  time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("", -(9*3600+30*60))),
			UpdatedAt:  time.Date(1, 1, 1, 0, 0, 0, 1, time.FixedZone("", 23*3600+59*60)),
			AcceptedAt: time.Now(), // with a monotonic reading
			Purged:     time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.Local),
			Reconciliations: []Reconciliation{
				{At: time.Date(2025, 6, 1, 0, 0, 0, 120000000, time.FixedZone("odd", 17))},
			},
		},
		"year 10000":     {CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"year -1":        {UpdatedAt: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		"offset 24h":     {Purged: time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600))},
		"bad trail time": {Reconciliations: []Reconciliation{{At: time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC)}}},
		"bad accepted":   {AcceptedAt: time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) {
			checkRecordJSON(t, r)
			checkEncodeRecord(t, r)
		})
	}
}

func TestEncodeRecordRefusesWhatMarshalRefuses(t *testing.T) {
	t.Parallel()
	r := pendingRecord(1)
	r.CreatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	_, err := encodeRecord(r)
	require.Error(t, err)
	assert.ErrorContains(t, err, "Time.MarshalJSON")
	assert.ErrorContains(t, err, keyRef(r.Key))
}

func TestEncodeRecordLeavesTrailAlone(t *testing.T) {
	t.Parallel()
	r := addedFieldsRecord(2)
	trail := r.Reconciliations
	_, err := encodeRecord(r)
	require.NoError(t, err)
	assert.Equal(t, cet, trail[0].At.Location(), "the caller's trail keeps its zone")
}

// randRecord builds a record from rng, every field random, often empty.
func randRecord(rng *rand.Rand) *Record {
	str := func() string {
		if rng.IntN(4) == 0 {
			return ""
		}
		pieces := []string{"a", "Z", "0", " ", "<", ">", "&", "\"", "\\", "/", "\n", "\x00", "\x1f", "\x7f",
			"é", "😀", "\u2028", "\u2029", "\xff", "\xed\xa0\x80", "\xe2\x80", "payments", "https://pay.example/v1"}
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	bytes := func() []byte {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return []byte{}
		}
		b := make([]byte, rng.IntN(70))
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	header := func() http.Header {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return http.Header{}
		}
		h := http.Header{}
		for range rng.IntN(20) {
			var vs []string
			if rng.IntN(5) > 0 {
				vs = []string{}
				for range rng.IntN(3) {
					vs = append(vs, str())
				}
			}
			h[str()] = vs
		}
		return h
	}
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("CET", 3600),
		time.FixedZone("", -(3*3600 + 30*60)), time.FixedZone("", 7)}
	when := func() time.Time {
		switch rng.IntN(60) {
		case 0, 1, 2, 3, 4, 5, 6, 7, 8, 9:
			return time.Time{}
		case 10, 11, 12:
			return time.Now()
		case 13: // years outside 0–9999 too
			return time.Unix(rng.Int64N(1<<40)-(1<<39), rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))])
		case 14: // an offset MarshalJSON refuses
			return time.Unix(rng.Int64N(4e9), 0).In(time.FixedZone("", 24*3600))
		}
		ns := rng.Int64N(1e9)
		if rng.IntN(2) == 0 {
			ns = ns / 1e6 * 1e6
		}
		return time.Unix(rng.Int64N(4e9), ns).In(zones[rng.IntN(len(zones))])
	}
	r := &Record{
		Key: str(), Name: str(), Method: str(), URL: str(), Header: header(), Body: bytes(),
		Fingerprint: str(), State: State(str()), CreatedAt: when(), UpdatedAt: when(),
		Attempts: int(rng.Int64()) >> rng.IntN(64), Operation: str(), LastError: str(), Host: str(),
		AcceptedAt: when(), Principal: str(), MayHaveExecuted: rng.IntN(2) == 0, Purged: when(),
	}
	if rng.IntN(3) == 0 {
		r.State = []State{Pending, Succeeded, Accepted, Failed, Expired}[rng.IntN(5)]
	}
	if rng.IntN(2) == 0 {
		r.Response = &Response{Status: rng.IntN(600), Header: header(), Body: bytes()}
	}
	if n := rng.IntN(4); n > 0 {
		r.SecretHeaders = []string{}
		for range n - 1 {
			r.SecretHeaders = append(r.SecretHeaders, str())
		}
	}
	if n := rng.IntN(4); n > 0 {
		r.Reconciliations = []Reconciliation{}
		for range n - 1 {
			r.Reconciliations = append(r.Reconciliations, Reconciliation{
				Outcome: str(), Source: str(), By: str(), At: when(), Note: str(),
			})
		}
	}
	return r
}

func TestRecordJSONRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	declined := 0
	for range 5000 {
		r := randRecord(rng)
		checkRecordJSON(t, r)
		checkEncodeRecord(t, r)
		if _, ok := appendRecordJSON(nil, r); !ok {
			declined++
		}
	}
	// Most random records hold a time MarshalJSON takes: the comparison
	// covers the appender, not only its fallback.
	assert.Less(t, declined, 2500)
	assert.Positive(t, declined, "and the fallback too")
}

// FuzzRecordJSON compares appendRecordJSON with json.Marshal on records
// made of arbitrary strings, bytes, times and numbers.
func FuzzRecordJSON(f *testing.F) {
	f.Add("k1", "order-1", "https://pay.example/<a>&\u2028", "Content-Type", "application/json",
		[]byte("{}"), int64(1735787045), int64(6), 3600, 3, true)
	f.Add("", "", "\xff\xed\xa0\x80", "", "", []byte(nil), int64(-62135596801), int64(0), 86400, -1, false)
	f.Add("\x00\"\\", "\x7f", "", "a\nb", "\t", []byte{0xff}, int64(253402300800), int64(999999999), -1, 0, true)
	f.Fuzz(func(t *testing.T, key, name, url, hk, hv string, body []byte, sec, nsec int64, offset, attempts int, flag bool) {
		at := time.Unix(sec, nsec).In(time.FixedZone("", offset))
		r := &Record{
			Key: key, Name: name, Method: hv, URL: url, Header: http.Header{hk: {hv, key}, hv: nil},
			Body: body, Fingerprint: hk, State: State(name), CreatedAt: at, UpdatedAt: at.Add(time.Duration(nsec)),
			Attempts: attempts, Operation: url, LastError: hv, Host: hk, Principal: key,
			MayHaveExecuted: flag, SecretHeaders: []string{hk, hv},
		}
		if flag {
			r.Response = &Response{Status: attempts, Header: http.Header{hv: {hk}}, Body: body}
			r.AcceptedAt = at
			r.Purged = at
			r.Reconciliations = []Reconciliation{{Outcome: name, Source: url, By: hk, At: at, Note: hv}}
		}
		checkRecordJSON(t, r)
		checkEncodeRecord(t, r)
	})
}
