package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
)

// ClaimsFunc returns the claims of a request's token. An error wrapping
// ErrUnidentified means the request carries no token; any other error is
// answered 401.
type ClaimsFunc func(r *http.Request) (map[string]any, error)

// ErrBadToken is returned by UnverifiedBearerClaims for a bearer token that
// is not a JWT (three base64url parts, the second a JSON object); the
// layer answers 401.
var ErrBadToken = errors.New("the bearer token is not a JWT with a JSON object payload")

// ErrMissingClaim is returned by JWTClaimPrincipal for a token without one
// of the claims it scopes by, or with one that is neither a string nor a
// number; the layer answers 401, whatever WithAnonymous says, since the
// caller did present credentials.
var ErrMissingClaim = errors.New("the token lacks a claim the idempotency layer scopes by")

// JWTClaimPrincipal returns a PrincipalFunc that scopes keys by claims of
// the request's token, read by claims: by default "sub", the subject,
// which stays the same when the token is renewed. Name a tenant claim
// ("tenant_id", "org_id") to scope by tenant, and add "iss" when tokens of
// several issuers are accepted (a subject is unique only per issuer, RFC
// 7519 §4.1.2). Every named claim must be present, a string or a number.
// The principal is "jwt:" followed by each claim's name and quoted value.
//
// JWTClaimPrincipal verifies nothing: it trusts what claims returns.
// Hand it the claims your authentication middleware verified and put in
// the request's context (ClaimsFromContext). Then a layer placed before
// that middleware by mistake finds no claims and refuses the request,
// instead of trusting a forged token. UnverifiedBearerClaims, which
// decodes the Authorization header's token without checking its
// signature, is for layers that only ever run after verification.
func JWTClaimPrincipal(claims ClaimsFunc, names ...string) PrincipalFunc {
	if len(names) == 0 {
		names = []string{"sub"}
	}
	names = append([]string(nil), names...)
	return func(r *http.Request) (string, error) {
		set, err := claims(r)
		if err != nil {
			return "", err
		}
		var b strings.Builder
		b.WriteString("jwt:")
		for i, name := range names {
			value, err := claimText(set, name)
			if err != nil {
				return "", err
			}
			if i > 0 {
				b.WriteByte(';')
			}
			b.WriteString(name)
			b.WriteByte('=')
			b.WriteString(strconv.Quote(value))
		}
		return b.String(), nil
	}
}

// claimText returns claim name of set as text: a non-empty string, or a
// number written in full.
func claimText(set map[string]any, name string) (string, error) {
	switch v := set[name].(type) {
	case string:
		if v != "" {
			return v, nil
		}
	case json.Number:
		return v.String(), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case int:
		return strconv.Itoa(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case nil:
		return "", fmt.Errorf("%w: no %q", ErrMissingClaim, name)
	default:
		return "", fmt.Errorf("%w: %q is a %T, want a string or a number", ErrMissingClaim, name, v)
	}
	return "", fmt.Errorf("%w: %q is empty", ErrMissingClaim, name)
}

// ClaimsFromContext returns the claims the app's authentication middleware
// verified and stored with context.WithValue(ctx, key, claims): a map with
// string keys, such as map[string]any or a named map type like
// golang-jwt's MapClaims. No value at key means the request is not
// authenticated (ErrUnidentified).
func ClaimsFromContext(key any) ClaimsFunc {
	want := reflect.TypeFor[map[string]any]()
	return func(r *http.Request) (map[string]any, error) {
		v := r.Context().Value(key)
		if v == nil {
			return nil, errNoAccount
		}
		if m, ok := v.(map[string]any); ok {
			return m, nil
		}
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Map && rv.Type().ConvertibleTo(want) {
			return rv.Convert(want).Interface().(map[string]any), nil
		}
		return nil, fmt.Errorf("server: the claims in the request context are a %T, want a map with string keys", v)
	}
}

// UnverifiedBearerClaims decodes the claims of the request's bearer JWT
// WITHOUT checking its signature, its expiry or its issuer. Use it only
// where every request reaching the layer has passed a middleware that
// verified that very token and refused the others: in front of one, a
// forged token names any account, and would be answered with that
// account's stored responses. Prefer ClaimsFromContext. A request without
// Authorization carries no token (ErrUnidentified); a malformed header is
// ErrBadAuthorization, a token that is not a JWT ErrBadToken.
func UnverifiedBearerClaims(r *http.Request) (map[string]any, error) {
	token, err := BearerToken(r)
	if err != nil {
		return nil, err
	}
	if token == "" {
		return nil, errNoBearer
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, ErrBadToken
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil, ErrBadToken
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var claims map[string]any
	if err := dec.Decode(&claims); err != nil || claims == nil || dec.More() {
		return nil, ErrBadToken
	}
	return claims, nil
}
