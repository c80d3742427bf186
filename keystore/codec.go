package keystore

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"
)

// Record encodings, the first byte of every stored record. A later
// encoding takes the next number, and a file written by a newer build
// fails to decode here with ErrCorrupt rather than being misread.
const (
	// recordEncodingV1: JSON of Record follows, with no checksum. Still
	// read, as written by earlier builds.
	recordEncodingV1 byte = 1
	// recordEncodingV2: the SHA-256 of the JSON, then the JSON. A damaged
	// byte anywhere fails the checksum; and reading a damaged V2 record
	// as a V1 one would take more than 32 edits (every checksum byte must
	// go), so damage never passes for a sound V1 record either.
	recordEncodingV2 byte = 2
)

// recordChecksumSize is the length of a V2 record's checksum.
const recordChecksumSize = sha256.Size

// utcRecord is the copy of r that encodeRecord stores: its times in UTC
// (Purged as it is), its reconciliation trail a copy, as the caller's is
// not ours to change.
func utcRecord(r *Record) Record {
	c := *r
	c.CreatedAt = r.CreatedAt.UTC()
	c.UpdatedAt = r.UpdatedAt.UTC()
	if !r.AcceptedAt.IsZero() {
		c.AcceptedAt = r.AcceptedAt.UTC()
	}
	if len(r.Reconciliations) > 0 {
		c.Reconciliations = make([]Reconciliation, len(r.Reconciliations))
		for i, v := range r.Reconciliations {
			v.At = v.At.UTC()
			c.Reconciliations[i] = v
		}
	}
	return c
}

// encodeRecord turns r into its stored form. Times are stored in UTC so a
// record reads back the same whatever the zone of the process that wrote it.
// The JSON is json.Marshal's, byte for byte, written by appendRecordJSON
// straight after room for the encoding byte and the checksum: one
// allocation for most records.
func encodeRecord(r *Record) ([]byte, error) {
	c := utcRecord(r)
	const head = 1 + recordChecksumSize
	out := make([]byte, head, head+recordJSONSize(&c))
	out, ok := appendRecordJSON(out, &c)
	if !ok {
		// A value appendRecordJSON does not write (a time MarshalJSON
		// refuses): json.Marshal says why.
		js, err := marshalRecord(c)
		if err != nil {
			return nil, fmt.Errorf("keystore: encode record %s: %w", keyRef(r.Key), err)
		}
		out = append(out[:head], js...)
	}
	out[0] = recordEncodingV2
	sum := sha256.Sum256(out[head:])
	copy(out[1:head], sum[:])
	return out, nil
}

// marshalRecord is json.Marshal(&c), in a function of its own so that
// only this rare path moves a copy of the record to the heap.
func marshalRecord(c Record) ([]byte, error) {
	return json.Marshal(&c)
}

// decodeRecord reads a record stored under key. Anything unreadable, or a
// record that names another key, is ErrCorrupt.
func decodeRecord(key string, data []byte) (*Record, error) {
	js, err := recordJSON(key, data)
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(js, &r); err != nil {
		return nil, fmt.Errorf("%w: record %s: %v", ErrCorrupt, keyRef(key), err)
	}
	if r.Key != key {
		return nil, fmt.Errorf("%w: record %s holds %s", ErrCorrupt, keyRef(key), keyRef(r.Key))
	}
	return &r, nil
}

// recordSummary is the part of a stored record that Update and Purge need;
// decoding only it skips the allocations of headers and bodies.
type recordSummary struct {
	Name      string    `json:"name"`
	State     State     `json:"state"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Purged    time.Time `json:"purged_at"`
}

// decodeSummary reads the summary of a record stored under key, with
// scanSummary when it can.
func decodeSummary(key string, data []byte) (recordSummary, error) {
	js, err := recordJSON(key, data)
	if err != nil {
		return recordSummary{}, err
	}
	if s, ok := scanSummary(js); ok {
		return s, nil
	}
	// Anything scanSummary leaves (malformed JSON among it) reads as it
	// always has.
	return unmarshalSummary(key, js)
}

// unmarshalSummary is decodeSummary with json.Unmarshal, in a function of
// its own so that only this rare path allocates the summary.
func unmarshalSummary(key string, js []byte) (recordSummary, error) {
	var s recordSummary
	if err := json.Unmarshal(js, &s); err != nil {
		return s, fmt.Errorf("%w: record %s: %v", ErrCorrupt, keyRef(key), err)
	}
	return s, nil
}

// recordJSON checks the encoding byte and the checksum, and returns the
// JSON they cover.
func recordJSON(key string, data []byte) ([]byte, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: record %s is empty", ErrCorrupt, keyRef(key))
	}
	switch data[0] {
	case recordEncodingV1:
		return data[1:], nil
	case recordEncodingV2:
		if len(data) < 1+recordChecksumSize {
			return nil, fmt.Errorf("%w: record %s is truncated", ErrCorrupt, keyRef(key))
		}
		js := data[1+recordChecksumSize:]
		if sum := sha256.Sum256(js); !bytes.Equal(sum[:], data[1:1+recordChecksumSize]) {
			return nil, fmt.Errorf("%w: record %s fails its checksum", ErrCorrupt, keyRef(key))
		}
		return js, nil
	}
	return nil, fmt.Errorf("%w: record %s has unknown encoding %d", ErrCorrupt, keyRef(key), data[0])
}
