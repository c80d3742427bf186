package idemtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/idemkit/idem/dialect"
)

// maxConformanceBody bounds how much of a response the checker reads.
const maxConformanceBody = 1 << 20

// exchange is one request the checker sent and the answer it got.
type exchange struct {
	// what names the request in a detail ("replay", "missing key", …).
	what   string
	status int
	header http.Header
	body   []byte
	// sent and answered bound the exchange, for telling a duplicate held
	// on a lock from one answered at once.
	sent, answered time.Time
}

// outgoing describes one POST to the guarded endpoint.
type outgoing struct {
	what string
	// keys are the key values: one header line each, or (body-field
	// dialects) the first one as the body member; nil sends none.
	keys []string
	body []byte
	// override replaces same-named headers of the configured Header
	// (a second principal, a slow hint).
	override http.Header
	// url replaces the endpoint's URL when set (the request-target check).
	url string
	// raw sends keys exactly as given, whatever the run's key form
	// (malformed keys, the two forms of the quoted-key check).
	raw bool
}

// post sends o and reads the whole answer.
func (r *conformanceRun) post(ctx context.Context, o outgoing) (exchange, error) {
	return r.send(ctx, o, nil)
}

// send sends o; a non-nil gate holds the body's last byte until it is
// closed (see burst).
func (r *conformanceRun) send(ctx context.Context, o outgoing, gate *burstGate) (exchange, error) {
	body := r.cfg.keyBody(o.keys, o.body)
	var rd io.Reader = bytes.NewReader(body)
	if gate != nil {
		ctx = gate.trace(ctx)
		rd = gate.reader(body)
	}
	target := r.cfg.url
	if o.url != "" {
		target = o.url
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, rd)
	if err != nil {
		return exchange{}, err
	}
	req.ContentLength = int64(len(body))
	for name, values := range r.cfg.header {
		req.Header[name] = append([]string(nil), values...)
	}
	for name, values := range o.override {
		req.Header[name] = append([]string(nil), values...)
	}
	req.Header.Set("Content-Type", r.cfg.contentType)
	r.cfg.keyHeader(req, o.keys, o.raw)
	sent := time.Now()
	resp, err := r.cfg.client.Do(req)
	if err != nil {
		return exchange{}, fmt.Errorf("%s: %w", o.what, err)
	}
	defer resp.Body.Close()
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, maxConformanceBody))
	if err != nil {
		return exchange{}, fmt.Errorf("%s: reading the response: %w", o.what, err)
	}
	e := exchange{what: o.what, status: resp.StatusCode, header: resp.Header, body: respBody, sent: sent, answered: time.Now()}
	r.quickestMu.Lock()
	if d := e.took(); r.quickest == 0 || d < r.quickest {
		r.quickest = d
	}
	r.quickestMu.Unlock()
	return e, nil
}

// took is how long the answer took.
func (e exchange) took() time.Duration { return e.answered.Sub(e.sent) }

// newKey returns a fresh key in the run's key format.
func (r *conformanceRun) newKey() string { return r.cfg.newKey() }

func (e exchange) success() bool { return e.status >= 200 && e.status < 300 }

// replayed reports whether the answer carries Idempotent-Replayed: true,
// this project's marker (judged by the replay-header check only).
func (e exchange) replayed() bool {
	return strings.EqualFold(strings.TrimSpace(e.header.Get("Idempotent-Replayed")), "true")
}

// isProblem reports whether the Content-Type is application/problem+json.
func (e exchange) isProblem() bool {
	mt, _, err := mime.ParseMediaType(e.header.Get("Content-Type"))
	return err == nil && mt == "application/problem+json"
}

// problemDoc is the part of an RFC 9457 document the checks read; the
// members are raw so that a wrong JSON type is reported, not ignored.
type problemDoc struct {
	Type   json.RawMessage `json:"type"`
	Title  json.RawMessage `json:"title"`
	Status json.RawMessage `json:"status"`
}

// problemType returns the body's problem "type" member, "" when the body
// is not a JSON object with a string type.
func (e exchange) problemType() string {
	var doc problemDoc
	if json.Unmarshal(e.body, &doc) != nil {
		return ""
	}
	var t string
	if json.Unmarshal(doc.Type, &t) != nil {
		return ""
	}
	return t
}

// sameAnswer reports whether e repeats want: same status, same body.
func (e exchange) sameAnswer(want exchange) bool {
	return e.status == want.status && bytes.Equal(e.body, want.body)
}

// summary describes the answer in a few words for a detail.
func (e exchange) summary() string {
	s := strconv.Itoa(e.status)
	if t := e.problemType(); t != "" {
		s += " " + t
	}
	return s
}

// retryAfterValid reports whether the Retry-After header is present and
// holds delta-seconds or an HTTP-date.
func (e exchange) retryAfterValid() bool {
	v := strings.TrimSpace(e.header.Get("Retry-After"))
	if v == "" {
		return false
	}
	if n, err := strconv.Atoi(v); err == nil {
		return n >= 0
	}
	_, err := http.ParseTime(v)
	return err == nil
}

// defaultResourceID returns the top-level "id" of a JSON object body, or a
// digest of the body when it has none.
func defaultResourceID(body []byte) string {
	var doc struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &doc) == nil && len(doc.ID) > 0 && string(doc.ID) != "null" {
		var s string
		if json.Unmarshal(doc.ID, &s) == nil {
			return s
		}
		return string(doc.ID) // a number or another JSON value
	}
	sum := sha256.Sum256(body)
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// settleTimeout bounds how long settle waits for an original to finish.
const settleTimeout = 30 * time.Second

// settle resends o until the answer no longer says the original is still
// executing (409, or the dialect's in-progress answer), waiting a little longer each time, and returns the
// first other answer. Every 409 seen is kept for the in-progress check.
func (r *conformanceRun) settle(ctx context.Context, o outgoing) (exchange, error) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	wait := 20 * time.Millisecond
	for {
		e, err := r.post(ctx, o)
		if err != nil || !r.inProgress(e) {
			return e, err
		}
		r.conflicts = append(r.conflicts, e)
		select {
		case <-ctx.Done():
			return exchange{}, fmt.Errorf("%s: still 409 when the run ended: %w", o.what, context.Cause(ctx))
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// inProgress reports whether e says an earlier request with its key is
// still executing, as the dialect's client reads it. A provider's
// key-reused answer to a duplicate of the same payload can only mean
// that too (PayPal answers a concurrent duplicate so).
func (r *conformanceRun) inProgress(e exchange) bool {
	if r.cfg.isDraft() {
		return e.status == http.StatusConflict
	}
	v := r.cfg.classify(e)
	return v == dialect.InProgress || v == dialect.KeyReused
}
