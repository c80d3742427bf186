package idem

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/idemkit/idem/keystore"
)

// MaxBodySize is the largest request body Begin and Transport accept: the
// body is buffered so that every attempt sends it again.
const MaxBodySize = 10 << 20

// State is the life stage of an intent.
type State = keystore.State

// The states of an intent.
const (
	// Pending: created, not yet settled; Do sends it with its key.
	Pending = keystore.Pending
	// Succeeded: a 2xx answer is stored; Do replays it locally.
	Succeeded = keystore.Succeeded
	// Accepted: the server answered 202 and the operation has not been
	// seen final yet; Do polls it again, never resends.
	Accepted = keystore.Accepted
	// Failed: a final non-2xx answer is stored; Do replays it locally.
	Failed = keystore.Failed
	// Expired: older than the server's retention while unsettled; never
	// resent, to be reconciled by hand.
	Expired = keystore.Expired
)

// Intent is one business decision and its idempotency key, as the keystore
// last recorded it. Do refreshes the fields when it returns; do not read
// them while a Do on the same Intent is running.
type Intent struct {
	// Key is the idempotency key, born with the intent and sent on every
	// attempt.
	Key string
	// Name is the business name given to Begin, "" for an unnamed intent.
	Name string
	// State is the intent's life stage.
	State State
	// Method and URL say what request the intent sends.
	Method, URL string
	// Fingerprint is the SHA-256 of method, URL and canonical body, hex.
	Fingerprint string
	// CreatedAt is when Begin created the intent; UpdatedAt its last change.
	CreatedAt, UpdatedAt time.Time
	// Attempts counts the attempts over the intent's whole life.
	Attempts int
	// Operation is the Location of a 202's operation, "" if none.
	Operation string
	// LastError describes the last failure, "" if none.
	LastError string
}

func intentFromRecord(r *keystore.Record) *Intent {
	in := &Intent{}
	in.refresh(r)
	return in
}

// refresh copies r into in field by field, leaving Key alone: Key never
// changes, and concurrent Do calls on one Intent read it before they
// serialise on the key's lock.
func (in *Intent) refresh(r *keystore.Record) {
	if in.Key != r.Key {
		in.Key = r.Key
	}
	in.Name = r.Name
	in.State = r.State
	in.Method = r.Method
	in.URL = r.URL
	in.Fingerprint = r.Fingerprint
	in.CreatedAt = r.CreatedAt
	in.UpdatedAt = r.UpdatedAt
	in.Attempts = r.Attempts
	in.Operation = r.Operation
	in.LastError = r.LastError
}

// Begin turns req into an intent: it reads the body, computes the payload
// fingerprint, generates the key and persists the intent before returning,
// so a crash after Begin cannot lose the key. Nothing is sent yet.
//
// A non-empty name makes Begin idempotent itself: the same name and the
// same payload return the existing intent with its key (after a restart
// too); the same name with a different payload fails with
// ErrIntentConflict. An empty name always starts a new intent.
//
// Secret headers (Authorization, Proxy-Authorization, Cookie and those of
// WithSecretHeaders) are removed from what is stored and kept in memory
// for this process, for every attempt of this intent.
func (c *Client) Begin(ctx context.Context, name string, req *http.Request) (*Intent, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	if req.Header.Get("Idempotency-Key") != "" {
		return nil, fmt.Errorf("%w: the request carries an Idempotency-Key; an intent generates its own (see WithKeyGenerator)", ErrInvalidRequest)
	}
	body, err := requestBody(req)
	if err != nil {
		return nil, err
	}
	method := requestMethod(req)
	url := req.URL.String()
	header, secrets := c.splitSecrets(req.Header)

	key, err := c.cfg.keyGen()
	if err != nil {
		return nil, fmt.Errorf("idem: generating key: %w", err)
	}
	if !validKey(key) {
		return nil, fmt.Errorf("idem: key generator returned an invalid key (need 1-255 visible ASCII characters)")
	}
	now := c.cfg.now()
	rec := &keystore.Record{
		Key:         key,
		Name:        name,
		Method:      method,
		URL:         url,
		Header:      header,
		Body:        body,
		Fingerprint: Fingerprint(method, url, body),
		State:       keystore.Pending,
		CreatedAt:   now,
		UpdatedAt:   now,
	}
	existing, created, err := c.store.Create(ctx, rec)
	if err != nil {
		return nil, fmt.Errorf("idem: persisting intent: %w", err)
	}
	if !created {
		if existing.Fingerprint != rec.Fingerprint {
			return nil, fmt.Errorf("%w: %q", ErrIntentConflict, name)
		}
		rec = existing
	}
	c.secrets.put(rec.Key, secrets)
	if c.debugEnabled(ctx) {
		c.log.DebugContext(ctx, "idem: intent begun", "key", keyHash(rec.Key), "name", name, "created", created)
	}
	return intentFromRecord(rec), nil
}

// Pending returns the intents that are not settled yet, oldest first:
// Pending ones (Do sends them with their key) and Accepted ones (Do polls
// their operation). Secrets are not stored, so a process resuming them
// after a restart supplies credentials through WithRequestEditor or a
// fresh Begin with the same name.
func (c *Client) Pending(ctx context.Context) ([]*Intent, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	recs, err := c.store.List(ctx, keystore.Filter{States: []State{Pending, Accepted}})
	if err != nil {
		return nil, fmt.Errorf("idem: listing pending intents: %w", err)
	}
	out := make([]*Intent, len(recs))
	for i, r := range recs {
		out[i] = intentFromRecord(r)
	}
	return out, nil
}

// Resume loads the intent with this key from the keystore, in whatever
// state it is; errors.Is(err, keystore.ErrNotFound) when there is none.
func (c *Client) Resume(ctx context.Context, key string) (*Intent, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	rec, err := c.store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("idem: loading intent (key hash %s): %w", keyHash(key), err)
	}
	return intentFromRecord(rec), nil
}

// Fingerprint is the SHA-256 (hex) over method, URL and body that tells two
// payloads apart. A body that parses as JSON is first put in RFC 8785
// canonical form, so key order and white space do not matter; any other
// body is hashed as is.
func Fingerprint(method, url string, body []byte) string {
	h := sha256.New()
	io.WriteString(h, method)
	h.Write([]byte{0})
	io.WriteString(h, url)
	h.Write([]byte{0})
	if canon, err := jcs.Transform(body); err == nil && len(body) > 0 {
		h.Write(canon)
	} else {
		h.Write(body)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// checkRequest rejects what cannot be sent: nil, no URL, no host, or a
// scheme other than http and https.
func checkRequest(req *http.Request) error {
	if req == nil {
		return fmt.Errorf("%w: nil request", ErrInvalidRequest)
	}
	if req.URL == nil {
		return fmt.Errorf("%w: request has no URL", ErrInvalidRequest)
	}
	switch strings.ToLower(req.URL.Scheme) {
	case "http", "https":
	default:
		return fmt.Errorf("%w: unsupported URL scheme %q (need http or https)", ErrInvalidRequest, req.URL.Scheme)
	}
	if req.URL.Host == "" {
		return fmt.Errorf("%w: URL has no host", ErrInvalidRequest)
	}
	return nil
}

func requestMethod(req *http.Request) string {
	if req.Method == "" {
		return http.MethodGet
	}
	return req.Method
}

// requestBody reads the whole body, from GetBody when there is one so the
// caller's Body stays unread. It returns nil for an empty body.
func requestBody(req *http.Request) ([]byte, error) {
	var rc io.ReadCloser
	switch {
	case req.GetBody != nil:
		b, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("%w: reading body: %v", ErrInvalidRequest, err)
		}
		rc = b
	case req.Body != nil && req.Body != http.NoBody:
		rc = req.Body
	default:
		return nil, nil
	}
	defer rc.Close()
	return readBounded(rc)
}

func readBounded(r io.Reader) ([]byte, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, MaxBodySize+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading body: %v", ErrInvalidRequest, err)
	}
	if n > MaxBodySize {
		return nil, fmt.Errorf("%w: body exceeds %d bytes", ErrInvalidRequest, MaxBodySize)
	}
	if n == 0 {
		return nil, nil
	}
	return buf.Bytes(), nil
}

// splitSecrets returns h without its secret headers (and without any
// Idempotency-Key), and the secret headers on their own.
func (c *Client) splitSecrets(h http.Header) (stored, secrets http.Header) {
	stored = http.Header{}
	secrets = http.Header{}
	for name, values := range h {
		canon := http.CanonicalHeaderKey(name)
		switch {
		case c.cfg.secretHeaders[canon]:
			secrets[canon] = append([]string(nil), values...)
		case canon == "Idempotency-Key":
		default:
			stored[canon] = append([]string(nil), values...)
		}
	}
	return stored, secrets
}
