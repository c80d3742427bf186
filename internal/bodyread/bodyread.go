// Package bodyread reads request and response bodies into buffers sized
// from their declared length, for the server layer and the reference
// server alike.
package bodyread

import (
	"errors"
	"io"
)

// Sized reads r to its end into a buffer sized for the declared length
// when there is one (-1 when unknown) and it is within limit, so a small
// body is read into a small buffer rather than io.ReadAll's 512 bytes and
// a large one without regrowing; a body longer than declared still reads
// whole. A declared length beyond limit is not trusted with an
// allocation: the body is read as it comes (the caller bounds it, for
// example with http.MaxBytesReader).
func Sized(r io.Reader, declared, limit int64) ([]byte, error) {
	if declared < 0 || declared > limit {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, declared+1) // +1: the read that finds EOF needs room
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		switch {
		case errors.Is(err, io.EOF):
			return b, nil
		case err != nil:
			return b, err
		case len(b) == cap(b):
			b = append(b, 0)[:len(b)]
		}
	}
}
