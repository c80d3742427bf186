package draftserver

import "net/http"

// Spec is the idempotency specification this server publishes at
// SpecPath.
//
// draft-07 §2.5: "Resources MUST publish a idempotency related
// specification. This specification MUST include expiration related
// policy if applicable." §2.2: "Uniqueness of the key MUST be defined by
// the resource owner and MUST be implemented by the clients of the
// resource." §5 recommends to "Establish a fixed format for the
// idempotency key and publish the key’s specification" and to "Always
// validate the key as per its published specification before processing
// any request": the format is a String, validated by parseKey.
const Spec = `Idempotency of POST /v1/payments

- Every request requires an Idempotency-Key header whose value is a
  Structured Field String (RFC 8941), such as
  Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324".
  Without one the answer is 400.
- A key belongs to the caller (the bearer token): another caller's key of
  the same value is another key.
- The fingerprint of a request is a SHA-256 checksum of its entire body.
  A key sent again with another body is answered 422.
- A key sent again while its first request is being processed is
  answered 409; retry later.
- A key sent again after its first request completed is answered with
  that request's answer, success or error.
- Expiration: a key is kept 24 hours after its request completed; after
  that it is forgotten and may be used again.
`

func publishSpec(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte(Spec))
}
