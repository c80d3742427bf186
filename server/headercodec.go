package server

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"net/http"
)

// EncodeHeader returns h in a binary-safe form for a store to persist: a
// header value may hold any byte (obs-text included), and a replay must
// give it back unchanged, which JSON's UTF-8 strings cannot promise. A nil
// header encodes to nil.
func EncodeHeader(h http.Header) ([]byte, error) {
	if h == nil {
		return nil, nil
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(h); err != nil {
		return nil, fmt.Errorf("encode response headers: %w", err)
	}
	return b.Bytes(), nil
}

// DecodeHeader reverses EncodeHeader; no bytes decode to a nil header, and
// bytes EncodeHeader did not produce are an error.
func DecodeHeader(b []byte) (http.Header, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var h http.Header
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&h); err != nil {
		return nil, fmt.Errorf("stored response headers are corrupt: %w", err)
	}
	return h, nil
}
