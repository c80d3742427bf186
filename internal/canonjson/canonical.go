// Package canonjson puts request bodies in the canonical form that payload
// fingerprints hash, for the idem client and the reference server alike.
//
// A body that is JSON is written in RFC 8785 (JCS) form: object members
// sorted, numbers and strings in canonical spelling, no insignificant
// white space. JCS writes every number as the IEEE 754 double nearest to
// it, which would make 9007199254740993 and 9007199254740992 (or 1e-400
// and 0) one body; a payments API must never merge two amounts, so such a
// body is not canonicalised at all and the caller hashes it raw.
package canonjson

import "github.com/gowebpki/jcs"

// Canonical returns the canonical form of body and isJSON=true when body
// is JSON that RFC 8785 accepts and whose every number keeps its exact
// decimal value in that form. Otherwise (empty or malformed body,
// duplicate member names, invalid UTF-8, a number a double cannot hold
// exactly) it returns nil, false and the caller should use body as it is,
// marked as raw so that it never collides with a canonical JSON body.
//
// Payment-style bodies (ASCII strings without escapes, integers below
// 10^15, true, false, null) take a fast path that gives exactly what
// jcs.Transform gives without its decoding and re-encoding; everything
// else goes through jcs.Transform and the number exactness check.
// The result never aliases body.
func Canonical(body []byte) (canon []byte, isJSON bool) {
	if len(body) == 0 {
		return nil, false
	}
	return AppendCanonical(make([]byte, 0, len(body)), body)
}

// AppendCanonical appends the canonical form of body to dst, as Canonical
// computes it, so a caller that hashes it behind other fields needs one
// buffer. When body is not canonicalised it returns nil, false; dst's
// spare capacity may then have been written.
func AppendCanonical(dst, body []byte) (out []byte, isJSON bool) {
	if len(body) == 0 {
		return nil, false
	}
	if out, ok := fastCanonical(dst, body); ok {
		return out, true // fast-path integers are exact doubles
	}
	canon, err := jcs.Transform(body)
	if err != nil || !numbersSurviveJCS(body) {
		return nil, false
	}
	return append(dst, canon...), true
}
