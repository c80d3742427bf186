package keystore

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memFullRecord sets every field of Record, nil and empty kept apart.
func memFullRecord() *Record {
	r := addedFieldsRecord(1)
	r.Name = "order-1"
	r.Header = http.Header{"Content-Type": {"application/json"}, "X-Empty": {}, "X-Nil": nil}
	r.Body = []byte(`{"amount":1}`)
	r.Attempts = 3
	r.LastError = "connection reset"
	r.Response = &Response{Status: 202, Header: http.Header{"Location": {"/op/1"}}, Body: []byte("accepted")}
	return r
}

// TestMemRecordRoundTrip: a decoded record is what Clone would copy,
// every field set (checked by reflection so a new field is not missed),
// with or without the optional parts.
func TestMemRecordRoundTrip(t *testing.T) {
	full := memFullRecord()
	v := reflect.ValueOf(full).Elem()
	for i := range v.NumField() {
		assert.False(t, v.Field(i).IsZero(), "memFullRecord leaves %s unset", v.Type().Field(i).Name)
	}
	bare := &Record{Key: "k", State: Pending, Response: &Response{Status: 500}, SecretHeaders: []string{}, Reconciliations: []Reconciliation{}}
	many := &Record{Key: "many", Header: http.Header{"X-Many": make([]string, 300)}} // a value count past one varint byte
	for _, r := range []*Record{full, bare, {Key: "empty"}, full.Tombstone(time.Now()), many} {
		e := encodeMemRecord(r)
		assert.LessOrEqual(t, cap(e.data), len(e.data)+len(e.data)/8+16, "kept without spare room beyond the size class")
		got, err := decodeMemRecord(e)
		require.NoError(t, err)
		want := r.Clone()
		for _, ts := range []*time.Time{&want.CreatedAt, &want.UpdatedAt, &want.AcceptedAt, &want.Purged} {
			*ts = ts.Round(0) // no monotonic reading in a store
		}
		assert.Equal(t, want, got)
	}
}

// TestMemRecordDamage: any truncation is an error, never a panic.
func TestMemRecordDamage(t *testing.T) {
	e := encodeMemRecord(memFullRecord())
	data := e.data
	for n := range len(data) {
		e.data = data[:n]
		_, err := decodeMemRecord(e)
		assert.Error(t, err, "truncated at %d", n)
	}
	e.data = append(data, 0)
	_, err := decodeMemRecord(e)
	assert.Error(t, err, "trailing byte")
}

// TestMemoryReadsAreCopies: changing a record a read returned changes
// nothing stored.
func TestMemoryReadsAreCopies(t *testing.T) {
	m := NewMemory()
	ctx := t.Context()
	_, _, err := m.Create(ctx, memFullRecord())
	require.NoError(t, err)
	got, err := m.Get(ctx, memFullRecord().Key)
	require.NoError(t, err)
	got.Header.Set("Content-Type", "text/plain")
	got.Body[0] = 'X'
	got.Response.Body[0] = 'X'
	again, err := m.Get(ctx, memFullRecord().Key)
	require.NoError(t, err)
	assert.Equal(t, memFullRecord().Header, again.Header)
	assert.Equal(t, memFullRecord().Body, again.Body)
	assert.Equal(t, memFullRecord().Response.Body, again.Response.Body)
}
