package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"net/http"
	"strings"
	"sync"
)

// AnonymousPrincipal is the scope principal of every request without an
// Authorization header under BearerPrincipal. A bearer principal always
// starts with "bearer:", so no token, not even "anonymous", shares it.
const AnonymousPrincipal = "anonymous"

// ErrBadAuthorization is returned for an Authorization header that is not
// a well-formed bearer token; the layer answers 401.
var ErrBadAuthorization = errors.New("authorization must be 'Bearer <token>' with 1-255 visible ASCII characters")

// PrincipalFunc returns who a request acts for: the principal part of its
// keys' scope, so two callers never see each other's answers. An error is
// answered 401 and nothing runs. What it returns is stored as is: return
// an opaque id or a hash, never a credential.
type PrincipalFunc func(r *http.Request) (string, error)

// WithPrincipal sets how a request's principal is found (default:
// BearerPrincipal with the WithPrincipalSecret secret).
func WithPrincipal(f PrincipalFunc) Option {
	return func(c *config) { c.principal = f }
}

// WithPrincipalSecret sets the secret that keys the hash of the default
// principal, the bearer token. Every process sharing a store must use the
// same secret, and keep it: another secret puts every caller in a new
// scope, where a retry runs again.
func WithPrincipalSecret(secret []byte) Option {
	return func(c *config) { c.principalSecret = append([]byte(nil), secret...) }
}

// BearerPrincipal returns a PrincipalFunc that scopes keys by bearer
// token, stored only as "bearer:" and its HMAC-SHA256 under secret, never
// raw. A request without Authorization gets AnonymousPrincipal; a
// malformed header is ErrBadAuthorization, never a silent anonymous.
func BearerPrincipal(secret []byte) PrincipalFunc {
	secret = append([]byte(nil), secret...)
	// Keyed hashes are reused: keying a new HMAC costs two SHA-256
	// states and their padded keys on every request.
	macs := sync.Pool{New: func() any { return &principalMAC{mac: hmac.New(sha256.New, secret)} }}
	return func(r *http.Request) (string, error) {
		token, err := BearerToken(r)
		if err != nil || token == "" {
			return AnonymousPrincipal, err
		}
		m := macs.Get().(*principalMAC)
		defer macs.Put(m)
		m.mac.Reset()
		m.in = append(m.in[:0], token...)
		m.mac.Write(m.in)
		const prefix = "bearer:"
		out := append(m.out[:0], prefix...)
		out = hex.AppendEncode(out, m.mac.Sum(m.sum[:0]))
		m.out = out
		return string(out), nil
	}
}

// principalMAC is a keyed HMAC and the buffers one principal needs, kept
// together so a request allocates only the principal string.
type principalMAC struct {
	mac     hash.Hash
	in, out []byte
	sum     [sha256.Size]byte
}

// BearerToken returns the request's bearer token, "" when it has no
// Authorization header, or ErrBadAuthorization for a header that is not
// exactly one "Bearer <token>" of 1–255 visible ASCII characters.
func BearerToken(r *http.Request) (string, error) {
	values := r.Header.Values("Authorization")
	switch len(values) {
	case 0:
		return "", nil
	case 1:
	default:
		return "", ErrBadAuthorization
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(values[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", ErrBadAuthorization
	}
	token = strings.TrimSpace(token)
	if token == "" || len(token) > 255 {
		return "", ErrBadAuthorization
	}
	for i := 0; i < len(token); i++ {
		if token[i] < 0x21 || token[i] > 0x7e {
			return "", ErrBadAuthorization
		}
	}
	return token, nil
}
