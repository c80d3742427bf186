package keystore

import (
	"encoding/json"
	"fmt"
	"time"
)

// recordEncodingV1 is the first byte of every stored record: JSON of Record
// follows. A later encoding takes the next number, and a file written by a
// newer build fails to decode here with ErrCorrupt rather than being
// misread.
const recordEncodingV1 byte = 1

// encodeRecord turns r into its stored form. Times are stored in UTC so a
// record reads back the same whatever the zone of the process that wrote it.
func encodeRecord(r *Record) ([]byte, error) {
	c := *r
	c.CreatedAt = r.CreatedAt.UTC()
	c.UpdatedAt = r.UpdatedAt.UTC()
	if !r.AcceptedAt.IsZero() {
		c.AcceptedAt = r.AcceptedAt.UTC()
	}
	if len(r.Reconciliations) > 0 {
		// A copy: the caller's trail is not ours to change.
		c.Reconciliations = make([]Reconciliation, len(r.Reconciliations))
		for i, v := range r.Reconciliations {
			v.At = v.At.UTC()
			c.Reconciliations[i] = v
		}
	}
	js, err := json.Marshal(&c)
	if err != nil {
		return nil, fmt.Errorf("keystore: encode record %s: %w", keyRef(r.Key), err)
	}
	out := make([]byte, 0, len(js)+1)
	out = append(out, recordEncodingV1)
	return append(out, js...), nil
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

// decodeSummary reads the summary of a record stored under key.
func decodeSummary(key string, data []byte) (recordSummary, error) {
	var s recordSummary
	js, err := recordJSON(key, data)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(js, &s); err != nil {
		return s, fmt.Errorf("%w: record %s: %v", ErrCorrupt, keyRef(key), err)
	}
	return s, nil
}

// recordJSON checks the encoding byte and returns the JSON after it.
func recordJSON(key string, data []byte) ([]byte, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: record %s is empty", ErrCorrupt, keyRef(key))
	}
	if data[0] != recordEncodingV1 {
		return nil, fmt.Errorf("%w: record %s has unknown encoding %d", ErrCorrupt, keyRef(key), data[0])
	}
	return data[1:], nil
}
