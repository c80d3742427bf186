package pgkeystore

import (
	"context"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// FuzzPostgresRoundTrip stores records with arbitrary names, bodies and
// server-supplied text and checks that each either round-trips (exactly,
// or with bad text bytes replaced where that is documented) or is refused
// with a clear error, never stored half-way.
func FuzzPostgresRoundTrip(f *testing.F) {
	f.Add("order-42", []byte(`{"amount":1000}`), "text/plain", "timeout", "/v1/operations/op_1")
	f.Add("", []byte{}, "", "", "")
	f.Add("bad\x00name", []byte{0, 1, 2, 0xff}, "caf\xe9", "upstream \xff\x00", "/op\x00")
	f.Add("名前", []byte("\x00"), "a\x00b", "\u2028", "%zz")
	f.Add("\xc3\x28", []byte(nil), "\xed\xa0\x80", "", "")

	ctx := context.Background()
	p := openTestPostgres(f)
	var n int
	f.Fuzz(func(t *testing.T, name string, body []byte, headerValue, lastError, operation string) {
		n++
		r := pendingRecord(n)
		r.Key = r.Key + "-fuzz"
		r.Name = name
		r.Body = body
		r.Header = map[string][]string{"X-Value": {headerValue}}
		r.LastError = lastError
		r.Operation = operation

		stored, created, err := p.Create(ctx, r)
		if postgresText(name) != name {
			require.Error(t, err, "a name Postgres cannot hold is refused")
			_, getErr := p.Get(ctx, r.Key)
			assert.True(t, errors.Is(getErr, keystore.ErrNotFound), "a refused record is not stored")
			return
		}
		require.NoError(t, err)
		got, err := p.Get(ctx, r.Key)
		if !created {
			// The name was taken by an earlier input: nothing was written.
			assert.ErrorIs(t, err, keystore.ErrNotFound)
			return
		}
		require.NoError(t, err)
		assert.Equal(t, stored.Header, got.Header, "Create returns what Get reads")
		assert.Equal(t, stored.LastError, got.LastError)
		assert.Equal(t, stored.Operation, got.Operation)
		assert.Equal(t, name, got.Name)
		assert.Equal(t, body == nil, got.Body == nil)
		assert.Equal(t, string(body), string(got.Body))
		assert.Equal(t, postgresText(lastError), got.LastError)
		assert.Equal(t, postgresText(operation), got.Operation)
		assert.Equal(t, []string{postgresText(headerValue)}, got.Header["X-Value"])
		assert.True(t, utf8.ValidString(got.LastError))
	})
}
