package idemtest

import (
	"bytes"
	"context"
	"crypto/rand"
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
}

// outgoing describes one POST to the guarded endpoint.
type outgoing struct {
	what string
	// keys are the Idempotency-Key field values, one header line each; nil
	// sends none.
	keys []string
	body []byte
	// override replaces same-named headers of the configured Header
	// (a second principal, a slow hint).
	override http.Header
}

// post sends o and reads the whole answer.
func (r *conformanceRun) post(ctx context.Context, o outgoing) (exchange, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.cfg.url, bytes.NewReader(o.body))
	if err != nil {
		return exchange{}, err
	}
	for name, values := range r.cfg.header {
		req.Header[name] = append([]string(nil), values...)
	}
	for name, values := range o.override {
		req.Header[name] = append([]string(nil), values...)
	}
	req.Header.Set("Content-Type", r.cfg.contentType)
	if o.keys != nil {
		// Set directly so that an empty value and repeated lines are sent
		// exactly as given.
		req.Header["Idempotency-Key"] = o.keys
	}
	resp, err := r.cfg.client.Do(req)
	if err != nil {
		return exchange{}, fmt.Errorf("%s: %w", o.what, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxConformanceBody))
	if err != nil {
		return exchange{}, fmt.Errorf("%s: reading the response: %w", o.what, err)
	}
	return exchange{what: o.what, status: resp.StatusCode, header: resp.Header, body: body}, nil
}

// newKey returns a fresh random idempotency key.
func newKey() string { return "conformance-" + rand.Text() }

func (e exchange) success() bool { return e.status >= 200 && e.status < 300 }

// replayed reports whether the answer carries Idempotent-Replayed: true.
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

// expectProblem reports "" when e is the given status with a problem type
// ending in "/"+suffix, or else what was seen instead.
func (e exchange) expectProblem(status int, suffix string) string {
	if e.status != status {
		return fmt.Sprintf("%s: got %s, want %d with a problem type ending /%s", e.what, e.summary(), status, suffix)
	}
	if t := e.problemType(); !strings.HasSuffix(t, "/"+suffix) {
		return fmt.Sprintf("%s: got %d with problem type %q, want a type ending /%s", e.what, e.status, t, suffix)
	}
	return ""
}

// summary describes the answer in a few words for a detail.
func (e exchange) summary() string {
	s := strconv.Itoa(e.status)
	if t := e.problemType(); t != "" {
		s += " " + t
	}
	if e.replayed() {
		s += " (replayed)"
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

// settle resends o until the answer is no longer 409 (the original is
// still executing), waiting a little longer each time, and returns the
// first other answer. Every 409 seen is kept for the in-progress check.
func (r *conformanceRun) settle(ctx context.Context, o outgoing) (exchange, error) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	wait := 20 * time.Millisecond
	for {
		e, err := r.post(ctx, o)
		if err != nil || e.status != http.StatusConflict {
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
