package keystore

import (
	"crypto/sha256"
	"encoding/hex"
)

// keyRef names an idempotency key in errors and logs without revealing
// it: callers log keystore errors, and a raw key must never reach a log.
// It is "key#" and the first 8 hex digits of the key's SHA-256, the same
// short hash the client logs, so a keystore error can be matched to the
// client's log lines about the same intent.
func keyRef(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "key#" + hex.EncodeToString(sum[:4])
}

// KeyRef names key as keystore errors do, "key#" and the first 8 hex
// digits of its SHA-256, so a tool can report a record (a damaged one
// named by a CorruptRecordsError, say) in the same words, safe to log.
func KeyRef(key string) string { return keyRef(key) }
