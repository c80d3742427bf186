package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
)

// MinKeyHashSecretLen is the shortest secret SetKeyHashSecret accepts.
const MinKeyHashSecretLen = 16

// ErrKeyHashSecretTooShort is returned by SetKeyHashSecret for a secret
// shorter than MinKeyHashSecretLen.
var ErrKeyHashSecretTooShort = errors.New("server: key hash secret too short")

// keyHashSecret keys every key hash of the process: random unless
// SetKeyHashSecret gave one.
var keyHashSecret atomic.Pointer[[]byte]

func init() {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret) // crypto/rand never fails on supported platforms
	keyHashSecret.Store(&secret)
}

// SetKeyHashSecret sets the secret KeyHash and TelemetryKeyHash are keyed
// with, for the whole process. Without it the secret is random per
// process, so the hashes of one key differ between processes; replicas
// whose logs must be followed together are given the same secret (at
// least MinKeyHashSecretLen bytes, kept like a password). Call it at
// start, before serving: a hash logged before the call does not match
// one logged after.
func SetKeyHashSecret(secret []byte) error {
	if len(secret) < MinKeyHashSecretLen {
		return fmt.Errorf("%w: need at least %d bytes, got %d", ErrKeyHashSecretTooShort, MinKeyHashSecretLen, len(secret))
	}
	s := append([]byte(nil), secret...)
	keyHashSecret.Store(&s)
	return nil
}

// KeyHash is what logs show instead of an idempotency key, which is never
// logged: the first 8 hex digits of HMAC-SHA256(secret, key), the secret
// being the process's (SetKeyHashSecret). Keyed, so a reader of the logs
// cannot confirm a guessed key (an order number, a derived key) by
// hashing it. The server and its stores all log key_hash this way, so one
// request can be followed through every log of a process.
func KeyHash(key string) string {
	sum := keyedKeySum(key)
	return hex.EncodeToString(sum[:4])
}

// keyedKeySum is the HMAC-SHA256 of key under the process's secret.
func keyedKeySum(key string) []byte {
	mac := hmac.New(sha256.New, *keyHashSecret.Load())
	mac.Write([]byte(key))
	return mac.Sum(nil)
}
