package server

import (
	"crypto/sha256"
	"encoding/hex"
)

// KeyHash is what logs show instead of an idempotency key, which is never
// logged: the first 8 hex digits of its SHA-256. The server and its stores
// all log key_hash this way, as the client does, so one request can be
// followed through every log.
func KeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:4])
}
