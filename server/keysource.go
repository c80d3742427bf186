package server

import (
	"net/http"
	"strings"
)

// keySource says where a request's key travels and how it is read.
type keySource struct {
	header      string
	parseHeader func(values []string) (string, error)
	// splitBody, when set, takes the key out of the body instead; it
	// returns the body the handler reads and the fingerprint covers.
	splitBody func(body []byte) (key string, rest []byte, err error)
	required  bool
	echo      bool
}

// WithKeyHeader reads the key from the header name, with parse (nil:
// ParseKey, the IETF draft's rules). parse gets the header's values as
// http.Header.Values returns them; ErrMissingKey from it means there is
// no key.
func WithKeyHeader(name string, parse func(values []string) (string, error)) Option {
	return func(c *config) {
		if parse == nil {
			parse = ParseKey
		}
		c.key.header, c.key.parseHeader, c.key.splitBody = http.CanonicalHeaderKey(name), parse, nil
	}
}

// WithKeyField reads the key from the top-level member field of a JSON
// object body, at most MaxKeyLength bytes (see SplitKeyField). The member
// is removed before the body is fingerprinted and handed to the handler.
func WithKeyField(field string) Option {
	return WithBodyKey(func(body []byte) (string, []byte, error) {
		return SplitKeyField(body, field, MaxKeyLength)
	})
}

// WithBodyKey reads the key from the body with split, which returns the
// key and the body left for the handler and the fingerprint; ErrMissingKey
// from it means there is no key.
func WithBodyKey(split func(body []byte) (key string, rest []byte, err error)) Option {
	return func(c *config) {
		if split != nil {
			c.key.splitBody = split
		}
	}
}

// WithOptionalKey lets a guarded request without a key run unguarded, as
// if the route were not protected: every retry executes again. By default
// such a request is refused with 400 /missing-key.
func WithOptionalKey() Option {
	return func(c *config) { c.key.required = false }
}

// WithKeyEcho copies the accepted key onto every answer, in the key
// header: bare, or as an RFC 8941 String when it holds a space, which
// only the quoted form carries.
func WithKeyEcho() Option {
	return func(c *config) { c.key.echo = true }
}

// echoValue is the key header value that carries key.
func echoValue(key string) string {
	if !strings.Contains(key, " ") {
		return key
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
}
