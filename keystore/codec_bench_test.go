package keystore

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"testing"
)

// settledRecord is pendingRecord(i) after a 201 with a small JSON body,
// the record a durable call's Do writes.
func settledRecord(i int) *Record {
	r := pendingRecord(i)
	r.Header["Idempotency-Key"] = []string{r.Key}
	r.Header["User-Agent"] = []string{"idem/0"}
	r.State = Succeeded
	r.Attempts = 1
	r.UpdatedAt = r.UpdatedAt.Add(3e6)
	r.Response = &Response{
		Status: 201,
		Header: http.Header{"Content-Type": {"application/json"}, "Date": {"Tue, 01 Dec 2026 15:00:00 GMT"}},
		Body:   []byte(`{"id":"pay_0001","status":"succeeded","amount":1200,"currency":"eur"}`),
	}
	return r
}

// encodeRecordMarshal is encodeRecord as it was before appendRecordJSON:
// json.Marshal of the UTC copy, then the checksum.
func encodeRecordMarshal(r *Record) ([]byte, error) {
	utc := utcRecord(r)
	js, err := json.Marshal(&utc)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(js)
	out := make([]byte, 0, 1+len(sum)+len(js))
	out = append(out, recordEncodingV2)
	out = append(out, sum[:]...)
	return append(out, js...), nil
}

// BenchmarkEncodeRecord compares encodeRecord with its former json.Marshal
// form on the two records of a durable call.
func BenchmarkEncodeRecord(b *testing.B) {
	for _, rec := range []struct {
		name string
		r    *Record
	}{{"pending", pendingRecord(1)}, {"settled", settledRecord(1)}} {
		for _, impl := range []struct {
			name string
			enc  func(*Record) ([]byte, error)
		}{{"json.Marshal", encodeRecordMarshal}, {"append", encodeRecord}} {
			b.Run("record="+rec.name+"/impl="+impl.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := impl.enc(rec.r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkDecodeSummary compares decodeSummary with its former
// json.Unmarshal form, checksum included in both.
func BenchmarkDecodeSummary(b *testing.B) {
	unmarshal := func(key string, data []byte) (recordSummary, error) {
		js, err := recordJSON(key, data)
		if err != nil {
			return recordSummary{}, err
		}
		return unmarshalSummary(key, js)
	}
	for _, rec := range []struct {
		name string
		r    *Record
	}{{"pending", pendingRecord(1)}, {"settled", settledRecord(1)}} {
		data, err := encodeRecord(rec.r)
		if err != nil {
			b.Fatal(err)
		}
		for _, impl := range []struct {
			name string
			dec  func(string, []byte) (recordSummary, error)
		}{{"json.Unmarshal", unmarshal}, {"scan", decodeSummary}} {
			b.Run("record="+rec.name+"/impl="+impl.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := impl.dec(rec.r.Key, data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkEncodeMemRecord is the in-memory encoding of the two records
// of a call (Memory keeps the second).
func BenchmarkEncodeMemRecord(b *testing.B) {
	for _, rec := range []struct {
		name string
		r    *Record
	}{{"pending", pendingRecord(1)}, {"settled", settledRecord(1)}} {
		b.Run("record="+rec.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = encodeMemRecord(rec.r)
			}
		})
	}
}
