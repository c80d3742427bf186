package idem

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idemkit/idem/internal/canonjson"
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
	// seen final yet; Do polls it again, never resends (see Client.Do for
	// how polling ends).
	Accepted = keystore.Accepted
	// Failed: a final non-2xx answer is stored (the request's, or its
	// operation's); Do replays it locally.
	Failed = keystore.Failed
	// Expired: older than the server's retention while unsettled (or
	// accepted that long ago, with its operation gone or silent); never
	// resent nor polled, to be reconciled by hand.
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
	// Principal is a keyed fingerprint of who the intent acts for (see
	// WithPrincipal), "" for anonymous; names are scoped by it.
	Principal string
	// State is the intent's life stage.
	State State
	// Method and URL say what request the intent sends.
	Method, URL string
	// Host is the Host header every attempt sends when it differs from the
	// URL's host (the request's Host given to Begin), "" otherwise.
	Host string
	// Fingerprint is the SHA-256 of method, URL and canonical body, hex.
	Fingerprint string
	// CreatedAt is when Begin created the intent; UpdatedAt its last change.
	CreatedAt, UpdatedAt time.Time
	// Attempts counts the attempts over the intent's whole life.
	Attempts int
	// Operation is the Location of a 202's operation, "" if none.
	Operation string
	// AcceptedAt is when the 202 arrived, zero if none did.
	AcceptedAt time.Time
	// LastError describes the last failure, "" if none.
	LastError string
	// MayHaveExecuted is set once an attempt may have taken effect
	// without the client holding the final answer; only an answer that
	// proves the outcome, or a reconciliation, settles the intent then.
	MayHaveExecuted bool
	// Reconciliations is the audit trail of verdicts reached without the
	// server's answer (WithReconciler, Settle), oldest first.
	Reconciliations []keystore.Reconciliation
	// Purged is when a purge reduced the intent to its tombstone (its
	// name, key, fingerprint, state and answer status kept, bodies
	// dropped); zero for a whole record.
	Purged time.Time

	// begun holds the record Begin built, fingerprinted and handed to the
	// keystore (keystore.Adopter) when it created the intent, and what it
	// was derived from; nil otherwise. Set before the Intent is returned
	// and never changed, so concurrent Do calls read it without a lock. Do
	// skips the integrity check (and the URL parse and principal of the
	// first attempt) for the record the keystore hands back only when it
	// is this very one (see checkIntegrity, begunIntent).
	begun *begunIntent
	// tx holds what BeginTx kept for the first Do, nil for an intent
	// not begun in a transaction (begintx.go).
	tx *txBegun
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
	in.Name = keystore.BusinessName(r.Name, r.Principal)
	in.Principal = r.Principal
	in.State = r.State
	in.Method = r.Method
	in.URL = r.URL
	in.Host = r.Host
	in.Fingerprint = r.Fingerprint
	in.CreatedAt = r.CreatedAt
	in.UpdatedAt = r.UpdatedAt
	in.Attempts = r.Attempts
	in.Operation = r.Operation
	in.AcceptedAt = r.AcceptedAt
	in.LastError = r.LastError
	in.MayHaveExecuted = r.MayHaveExecuted
	in.Reconciliations = r.Reconciliations
	in.Purged = r.Purged
}

// Begin turns req into an intent: it reads the body, computes the payload
// fingerprint, generates the key and persists the intent before returning,
// so a crash after Begin cannot lose the key. Nothing is sent yet.
//
// A non-empty name makes Begin idempotent itself: the same name and the
// same payload return the existing intent with its key (after a restart
// too); the same name with a different payload, or a different Host,
// fails with ErrIntentConflict. An empty name always starts a new intent.
//
// A req.Host other than the URL's host (a virtual host reached through
// another address) is stored with the intent and sent on every attempt,
// after a restart too, and on the polls of an operation on the intent's
// origin.
//
// Secret headers (Authorization, Proxy-Authorization, Cookie and those of
// WithSecretHeaders) are removed from what is stored and kept in memory
// for this process, for every attempt of this intent; so are credentials
// in the URL (https://user:password@host/), which are stored without
// them and sent as Basic credentials, as net/http would.
func (c *Client) Begin(ctx context.Context, name string, req *http.Request, opts ...BeginOption) (*Intent, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	bopts, err := beginOptions(opts)
	if err != nil {
		return nil, err
	}
	return c.begin(ctx, nil, name, req, bopts)
}

// begin is Begin with its options read; tx says where the intent is
// created: nil for the keystore itself, a caller's transaction for
// BeginTx.
func (c *Client) begin(ctx context.Context, tx *txTarget, name string, req *http.Request, bopts beginConfig) (*Intent, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	if c.carriesKeyHeader(req.Header) {
		return nil, fmt.Errorf("%w: the request carries an %s header; an intent generates its own (see WithKeyGenerator)", ErrInvalidRequest, c.cfg.dialect.KeyHeader)
	}
	payload, err := requestBody(req)
	if err != nil {
		return nil, err
	}
	method := requestMethod(req)
	host := hostOverride(req)
	header, sent, withSecrets := c.splitSecrets(req.Header)
	if withURLCredentials(req.URL, sent) {
		withSecrets = true
	}
	stored := c.urlMemo.of(req.URL)
	target, params := c.withoutSecretParams(stored.s)

	key, body, err := c.intentKey(payload, bopts.key)
	if err != nil {
		return nil, err
	}
	principal, secretNames, err := c.beginPrincipal(req, sent)
	if err != nil {
		return nil, err
	}
	now := c.cfg.now()
	blk := new(begunBlock) // the record, and the Intent should the keystore adopt it
	rec := &blk.rec
	*rec = keystore.Record{
		Key:           key,
		Name:          keystore.ScopedName(name, principal),
		Principal:     principal,
		SecretHeaders: secretNames,
		Method:        method,
		URL:           target,
		Host:          host,
		Header:        header,
		Body:          body,
		Fingerprint:   Fingerprint(method, target, payload),
		State:         keystore.Pending,
		CreatedAt:     now,
		UpdatedAt:     now,
	}
	if bopts.adopt != "" && name == "" {
		return nil, fmt.Errorf("%w: WithAdopt adopts a named intent; give Begin its name", ErrInvalidRequest)
	}
	if name != "" {
		// A name stored for another principal, or none, is never begun
		// again under a new key without the caller's word (identity.go).
		if err := c.checkNamesakes(ctx, name, rec, sent, req, bopts.adopt); err != nil {
			return nil, err
		}
	}
	// rec is only read from here on, so a store that can keep it instead
	// of a copy may (keystore.Adopter).
	var existing *keystore.Record
	var created bool
	if tx != nil {
		existing, created, err = c.createInTx(ctx, tx, rec, bopts.key != "")
		if err != nil {
			return nil, err
		}
	} else {
		err = c.readStore(ctx, "storing the intent", func(wctx context.Context) (err error) {
			existing, created, err = c.createRecordClaimed(wctx, rec)
			return err
		})
		switch {
		case err != nil && bopts.key != "" && errors.Is(err, keystore.ErrDuplicateKey):
			// A key of the caller's: it may name this very intent.
			if existing, err = c.existingByKey(ctx, rec, err, c.store.Get); err != nil {
				return nil, err
			}
		case err != nil:
			existing, created, err = c.settleCreateDoubt(ctx, rec, err)
			if err != nil {
				return nil, err
			}
		}
	}
	if !created {
		if existing.Fingerprint != rec.Fingerprint || existing.Host != rec.Host {
			return nil, fmt.Errorf("%w: %q", ErrIntentConflict, name)
		}
		if bopts.key != "" && existing.Key != bopts.key {
			return nil, fmt.Errorf("%w: %q is bound to another key", ErrIntentConflict, name)
		}
		rec = existing
	}
	// The process keeps the header as sent, for the secrets in it; none
	// to keep, no entry.
	var secrets http.Header
	if withSecrets {
		secrets = sent
	}
	if tx != nil {
		// Kept with the Intent until its first Do finds the record
		// committed: a transaction rolled back leaves nothing behind.
		out := intentFromRecord(rec)
		out.tx = &txBegun{secrets: secrets, params: params, created: created}
		return out, nil
	}
	if created || !rec.State.Settled() {
		// A settled intent is never sent again: nothing to keep.
		c.local.begun(rec.Key, secrets, params, created)
	}
	if c.debugEnabled(ctx) {
		c.log.DebugContext(ctx, "idem: intent begun", "key", keyHash(rec.Key), "name", name, "created", created)
	}
	if created && existing == rec {
		return begunIntentOf(blk, stored, params, secrets, sent), nil // built and fingerprinted above, and adopted as it is
	}
	return intentFromRecord(rec), nil
}

// carriesKeyHeader reports whether h holds the dialect's key header under
// any spelling.
func (c *Client) carriesKeyHeader(h http.Header) bool {
	name := c.cfg.dialect.KeyHeader
	if name == "" {
		return false
	}
	for n, values := range h {
		if len(values) > 0 && strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// intentKey makes the key of a new intent whose payload is body and
// returns it with the body to send. A dialect that carries the key in the
// body (a JSON member, or a place of its own such as Shopify's GraphQL
// directive) takes the key the body already carries, and otherwise gets a
// new key written into the body.
func (c *Client) intentKey(body []byte, chosen string) (string, []byte, error) {
	d := &c.cfg.dialect
	if d.KeyInBody() {
		k, ok, err := findBodyKey(d, body)
		if err != nil {
			return "", nil, err
		}
		if ok {
			if err := d.CheckKey(k); err != nil {
				return "", nil, fmt.Errorf("%w: the key in the body (%s): %v", ErrInvalidRequest, bodyKeyPlace(d), err)
			}
			if chosen != "" && chosen != k {
				return "", nil, fmt.Errorf("%w: WithIntentKey and the body (%s) give two keys", ErrInvalidRequest, bodyKeyPlace(d))
			}
			return k, body, nil
		}
	}
	key := chosen
	if key != "" {
		if err := d.CheckKey(key); err != nil {
			return "", nil, fmt.Errorf("%w: WithIntentKey: %v", ErrInvalidRequest, err)
		}
	} else {
		var err error
		if key, err = c.cfg.keyGen(); err != nil {
			return "", nil, fmt.Errorf("idem: generating key: %w", err)
		}
		if err := d.CheckKey(key); err != nil {
			return "", nil, fmt.Errorf("idem: key generator returned an invalid key: %w", err)
		}
	}
	if d.KeyInBody() {
		var err error
		if body, err = placeBodyKey(d, body, key); err != nil {
			return "", nil, err
		}
	}
	return key, body, nil
}

// beginPrincipal is the principal of req, whose header as it is sent is
// sent (URL credentials among it), and the secrets it carries (see
// principalOf). The default principal reads the secret headers of sent
// alone, without rebuilding the request.
func (c *Client) beginPrincipal(req *http.Request, sent http.Header) (string, []string, error) {
	if c.cfg.principal != nil {
		out := req.WithContext(req.Context())
		out.Header = sent.Clone() // the caller's function may change what it is given
		return c.principalOf(out)
	}
	params := c.secretParamsOf(req)
	if params == nil {
		if principal, names, ok := c.principalMemo.lookup(sent, c.cfg.secretHeaders); ok {
			return principal, names, nil
		}
	}
	names := c.secretNames(sent, params)
	principal := c.credentialsPrincipal(sent, params, names)
	if params == nil && principal != "" {
		c.principalMemo.remember(sent, names, principal)
	}
	return principal, names, nil
}

// createRecord stores a record the caller built and only reads from then
// on: a store that implements keystore.Adopter keeps it without a copy.
func (c *Client) createRecord(ctx context.Context, rec *keystore.Record) (*keystore.Record, bool, error) {
	if a, ok := c.store.(keystore.Adopter); ok {
		return a.AdoptCreate(ctx, rec)
	}
	return c.store.Create(ctx, rec)
}

// storeSettled writes a record that is only read from then on: a store
// that implements keystore.Deferrer takes it without waiting for a sync
// (a lost settle leaves the intent Pending, and its resume gets the
// server's replay), one that implements keystore.Adopter without a copy.
func (c *Client) storeSettled(ctx context.Context, rec *keystore.Record) error {
	if d, ok := c.store.(keystore.Deferrer); ok && rec.State.Settled() && ctx.Value(heldClaimKey{}) == nil {
		return d.UpdateDeferred(ctx, rec)
	}
	if a, ok := c.store.(keystore.Adopter); ok {
		return a.AdoptUpdate(ctx, rec)
	}
	return c.update(ctx, rec)
}

// storeEncodesSettled reports whether storeSettled hands a settled record
// to a keystore that keeps none of it, only its own copy, made before
// the write returns: the memory keystore (its AdoptUpdate encodes the
// record, as Update does). The stored answer may then share the header of
// the response returned to the caller, who can change it only after.
func (c *Client) storeEncodesSettled() bool {
	_, ok := c.store.(*keystore.Memory)
	return ok
}

// Pending returns the intents that are not settled yet, oldest first.
// When the keystore holds damaged records, it returns the intents it
// could read together with an error matching keystore.ErrCorrupt (a
// *keystore.CorruptRecordsError naming the damaged ones). The intents are:
// Pending ones (Do sends them with their key) and Accepted ones (Do polls
// their operation, until it is final, gone, or silent past the retention). Secrets are not stored, so a process resuming them
// after a restart supplies credentials through WithRequestEditor or a
// fresh Begin with the same name.
func (c *Client) Pending(ctx context.Context) ([]*Intent, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	var recs []*keystore.Record
	err := c.readStore(ctx, "listing the intents", func(rctx context.Context) (err error) {
		recs, err = c.store.List(rctx, keystore.Filter{States: []State{Pending, Accepted}})
		return err
	})
	var damaged *keystore.CorruptRecordsError
	if err != nil && !errors.As(err, &damaged) {
		return nil, fmt.Errorf("idem: listing pending intents: %w", err)
	}
	out := make([]*Intent, len(recs))
	for i, r := range recs {
		out[i] = intentFromRecord(r)
	}
	if damaged != nil {
		// The good intents, and the damaged ones named: one bad record
		// never hides the rest.
		return out, fmt.Errorf("idem: listing pending intents: %w", damaged)
	}
	return out, nil
}

// Resume loads the intent with this key from the keystore, in whatever
// state it is; errors.Is(err, keystore.ErrNotFound) when there is none.
func (c *Client) Resume(ctx context.Context, key string) (*Intent, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	rec, err := c.getStored(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("idem: loading intent (key hash %s): %w", keyHash(key), err)
	}
	return intentFromRecord(rec), nil
}

// fingerprintVersion names the layout Fingerprint hashes, so a later
// layout can never give the same digest for another payload.
const fingerprintVersion = "idem-client-fingerprint-v2"

// Body kinds, hashed as a field of their own so that a raw body never
// collides with the canonical form of a JSON body.
const (
	bodyKindJSON = "json"
	bodyKindRaw  = "raw"
)

// Fingerprint is the SHA-256 (hex) over method, URL and body that tells two
// payloads apart. A body that is JSON is first put in RFC 8785 canonical
// form, so member order, white space and number spelling do not matter;
// any other body is hashed as is, and so is JSON with a number an IEEE 754
// double cannot hold exactly (9007199254740993, 1e-400), which the
// canonical form would round into another amount. Every field is
// length-prefixed and the body's kind (JSON or raw) is hashed too, so no
// two different payloads share the bytes that are hashed.
//
// Intents persist their fingerprint: the layout is versioned, and
// intents stored under an earlier layout conflict with a Begin of the
// same name (ErrIntentConflict) instead of merging with it.
func Fingerprint(method, target string, body []byte) string {
	// One buffer hashed at once: cheaper than feeding a streaming digest
	// piece by piece, for the same bytes. The canonical form is appended
	// to it in place, the body's kind assumed JSON; a body that is not
	// canonicalised goes in raw instead, from the kind field on.
	fields := [...]string{fingerprintVersion, method, target}
	size := len(body) + 8*(len(fields)+2) + len(bodyKindJSON)
	for _, f := range fields {
		size += len(f)
	}
	buf := make([]byte, 0, size)
	for _, f := range fields {
		buf = appendField(buf, f)
	}
	kindAt := len(buf)
	buf = appendField(buf, bodyKindJSON)
	lenAt := len(buf)
	buf = binary.BigEndian.AppendUint64(buf, 0) // the payload's length, set below
	if withCanon, isJSON := canonjson.AppendCanonical(buf, body); isJSON {
		buf = withCanon
		binary.BigEndian.PutUint64(buf[lenAt:], uint64(len(buf)-lenAt-8))
	} else {
		buf = appendField(buf[:kindAt], bodyKindRaw)
		buf = binary.BigEndian.AppendUint64(buf, uint64(len(body)))
		buf = append(buf, body...)
	}
	sum := sha256.Sum256(buf)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}

// appendField appends f to buf, prefixed by its length.
func appendField(buf []byte, f string) []byte {
	buf = binary.BigEndian.AppendUint64(buf, uint64(len(f)))
	return append(buf, f...)
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
	if !validHost(req.Host) {
		return fmt.Errorf("%w: invalid Host %q (need a host[:port] in ASCII; punycode for international names)", ErrInvalidRequest, req.Host)
	}
	return nil
}

// hostOverride is the Host req sends when it is not the URL's own, ""
// when it is.
func hostOverride(req *http.Request) string {
	if req.Host == req.URL.Host {
		return ""
	}
	return req.Host
}

// validHost reports whether h may be sent as a Host header: the bytes
// net/http accepts (RFC 3986 reg-name, IP literals, a port), so a bad
// override fails Begin instead of every attempt.
func validHost(h string) bool {
	for i := range len(h) {
		c := h[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!$%&'()*+,-.:;=[]_~", c) >= 0:
		default:
			return false
		}
	}
	return true
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
	body, err := readBounded(rc, req.ContentLength)
	if err != nil {
		return nil, err
	}
	if err := checkBodyUnread(req, body); err != nil {
		return nil, err
	}
	return body, nil
}

// readBounded reads a request body of at most MaxBodySize bytes; sizeHint
// is its declared length (ContentLength, <= 0 when unknown).
func readBounded(r io.Reader, sizeHint int64) ([]byte, error) {
	body, err := readUpTo(r, MaxBodySize+1, sizeHint)
	if err != nil {
		return nil, fmt.Errorf("%w: reading body: %v", ErrInvalidRequest, err)
	}
	if len(body) > MaxBodySize {
		return nil, fmt.Errorf("%w: body exceeds %d bytes", ErrInvalidRequest, MaxBodySize)
	}
	if len(body) == 0 {
		return nil, nil
	}
	return body, nil
}

// readUpTo reads r to its end or to limit bytes, whichever comes first.
// A body whose length is declared (sizeHint > 0) is read into one buffer
// of exactly that size plus the byte that shows the end, instead of the
// doubling growth of io.ReadAll; a wrong hint only costs a regrowth.
func readUpTo(r io.Reader, limit, sizeHint int64) ([]byte, error) {
	size := int64(512)
	if sizeHint > 0 {
		size = sizeHint + 1
	}
	size = min(size, limit)
	buf := make([]byte, 0, size)
	for int64(len(buf)) < limit {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(2*int64(cap(buf)), limit))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// withURLCredentials sets in sent, the header as it is sent, the user
// information of u (https://user:password@host/), a credential like
// Authorization, as Basic credentials the way net/http would, unless sent
// already holds an Authorization; it reports whether it did. The URL is
// stored without it (urlMemoSlot.of).
func withURLCredentials(u *url.URL, sent http.Header) bool {
	if u.User == nil || sent.Get("Authorization") != "" {
		return false
	}
	password, _ := u.User.Password()
	basic := &http.Request{Header: http.Header{}}
	basic.SetBasicAuth(u.User.Username(), password)
	sent["Authorization"] = basic.Header["Authorization"]
	return true
}

// splitSecrets returns h as it is stored, without its secret headers,
// and h as it is sent, secrets included; neither holds an
// Idempotency-Key, and every name is canonical. Both are deep copies
// whose values share no slice: the header sent is handed to the caller
// in resp.Request, the stored one is the record's. withSecrets says h
// holds a secret header (with values or not).
func (c *Client) splitSecrets(h http.Header) (stored, sent http.Header, withSecrets bool) {
	n := 0
	for _, values := range h {
		n += len(values)
	}
	backing := make([]string, 2*n) // the sent values, then the stored ones
	stored = make(http.Header, len(h))
	sent = make(http.Header, len(h))
	for name, values := range h {
		canon := http.CanonicalHeaderKey(name)
		if canon == "Idempotency-Key" {
			continue
		}
		var own []string
		if values != nil {
			k := copy(backing, values)
			own, backing = backing[:k:k], backing[k:]
		}
		sent[canon] = own
		if c.cfg.secretHeaders[canon] {
			withSecrets = true
			continue
		}
		if values != nil {
			k := copy(backing, values)
			own, backing = backing[:k:k], backing[k:]
		}
		stored[canon] = own
	}
	return stored, sent, withSecrets
}
