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

// AnonymousPrincipal is the scope principal of every request that names no
// principal, when WithAnonymous allows such requests. The principals the
// helpers return all carry a prefix ("bearer:", "account:", "jwt:"), so
// no caller, not even one whose token or account is "anonymous", shares
// it.
const AnonymousPrincipal = "anonymous"

// ErrBadAuthorization is returned for an Authorization header that is not
// a well-formed bearer token; the layer answers 401.
var ErrBadAuthorization = errors.New("authorization must be 'Bearer <token>' with 1-255 visible ASCII characters")

// ErrUnidentified is what a PrincipalFunc returns (wrapped, or as "" with
// a nil error) for a request that names no principal at all: no account in
// its context, no bearer token. The layer answers such a guarded request
// 401 /unauthorized, unless WithAnonymous puts it in AnonymousPrincipal's
// scope. Credentials that are present but unusable are another error,
// answered 401 whatever WithAnonymous says.
var ErrUnidentified = errors.New("the request names no principal: authenticate it before the idempotency layer, or allow anonymous callers with server.WithAnonymous")

// PrincipalFunc returns who a request acts for: the principal part of its
// keys' scope, so two callers never see each other's answers. "" or an
// error wrapping ErrUnidentified means the request names none (see
// WithAnonymous); any other error is answered 401 and nothing runs. What
// it returns is stored as is: return an opaque id or a hash, never a
// credential.
//
// The principal must stay the same for as long as a client may retry a
// key (the retention): a retry in another scope runs again. Name the
// account, not the credential, wherever credentials rotate:
// AccountFromContext, ContextPrincipal, JWTClaimPrincipal.
type PrincipalFunc func(r *http.Request) (string, error)

// WithPrincipal sets how a request's principal is found. New requires it,
// or WithAnonymous: see ErrNoPrincipal for the choices.
func WithPrincipal(f PrincipalFunc) Option {
	return func(c *config) { c.principal = f }
}

// WithAnonymous lets guarded requests that name no principal run, all in
// one scope, AnonymousPrincipal. Without it they are answered 401. Alone
// (without WithPrincipal) it puts every request in that one scope: for a
// single-tenant service with no notion of caller.
func WithAnonymous() Option {
	return func(c *config) { c.anonymous = true }
}

// WithPrincipalSecret no longer chooses a principal; New refuses it alone
// with ErrNoPrincipal.
//
// Deprecated: it made BearerPrincipal the silent default, which scopes
// keys by credential: a renewed token put a retry in a new scope, where
// it ran again. Name the account (AccountFromContext, ContextPrincipal,
// JWTClaimPrincipal), or, for credentials that never rotate, say
// WithPrincipal(BearerPrincipal(secret)).
func WithPrincipalSecret(secret []byte) Option {
	return func(c *config) { c.principalSecret = len(secret) > 0 }
}

// BearerPrincipal returns a PrincipalFunc that scopes keys by bearer
// token, stored only as "bearer:" and its HMAC-SHA256 under secret, never
// raw. Use it only for credentials that never rotate (a long-lived API
// key): a renewed token (an OAuth access token refreshed every hour) is
// another principal, and a retry sent with it runs again. A request
// without Authorization names no principal (ErrUnidentified); a malformed
// header is ErrBadAuthorization, never a silent anonymous. Every process
// sharing a store must use the same secret, and keep it: another secret
// puts every caller in a new scope.
func BearerPrincipal(secret []byte) PrincipalFunc {
	secret = append([]byte(nil), secret...)
	// Keyed hashes are reused: keying a new HMAC costs two SHA-256
	// states and their padded keys on every request.
	macs := sync.Pool{New: func() any { return &principalMAC{mac: hmac.New(sha256.New, secret)} }}
	return func(r *http.Request) (string, error) {
		token, err := BearerToken(r)
		if err != nil {
			return "", err
		}
		if token == "" {
			return "", errNoBearer
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

// errNoBearer is ErrUnidentified for a request without Authorization.
var errNoBearer = &unidentifiedError{what: "the request has no Authorization header"}

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
