package server_test

import (
	"bytes"
	"encoding/gob"
	"net/http"
	"testing"

	"github.com/idemkit/idem/server"
)

// benchStoredHeader is the header a payments answer stores.
var benchStoredHeader = http.Header{
	"Content-Type": {"application/json"},
	"Location":     {"/payments/pay_8f2c1e"},
}

// BenchmarkHeaderCodec encodes then decodes a stored header in the
// compact form and, as the contender, in the gob form earlier versions
// wrote: what a Postgres completion and replay pay per request.
func BenchmarkHeaderCodec(b *testing.B) {
	b.Run("compact", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			enc, err := server.EncodeHeader(benchStoredHeader)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := server.DecodeHeader(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("gob", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var buf bytes.Buffer
			if err := gob.NewEncoder(&buf).Encode(benchStoredHeader); err != nil {
				b.Fatal(err)
			}
			// DecodeHeader still reads this form.
			if _, err := server.DecodeHeader(buf.Bytes()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
