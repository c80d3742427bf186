package idem

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"sync/atomic"

	"github.com/idemkit/idem/keystore"
)

// begunIntent is what Begin built for an intent it created, when the
// keystore adopted the record as it is (keystore.Adopter): the record and
// what Begin derived it from. None of it is ever modified. Do uses it only
// while the keystore hands back that very record (keystore.Sharer): the
// record's method, URL and body are then the ones Begin fingerprinted (see
// checkIntegrity), and its URL and principal the ones below were computed
// for, so the first attempt need not parse the URL nor compute the
// principal again.
type begunIntent struct {
	rec *keystore.Record
	// secrets is the map Begin kept for the intent's secret headers
	// (Client.local: the header as sent) and named the default principal
	// from; nil for none.
	secrets http.Header
	// sent is the header of the request as Begin was given it (secrets
	// included, no key), built for the first attempt, which sends this
	// very map: taken once (takeSent), by the first Do.
	sent      http.Header
	sentTaken atomic.Bool
	// work is a record for the first Do to settle rec in (workRecord),
	// taken once: a store may keep the settled record as it is.
	work      *keystore.Record
	workTaken atomic.Bool
	// target is rec.URL as url.Parse reads it, when parsed says Begin
	// vouches for that (see reparsesAsItself); otherwise the first attempt
	// parses rec.URL as any other.
	target url.URL
	parsed bool
}

// begunBlock is what Begin builds for a new intent, in one allocation:
// the record, the Intent and its begunIntent should the keystore adopt
// the record, and a record for the first Do to settle in. Do then reads
// and writes memory Begin wrote side by side, instead of pieces the
// collector scattered.
type begunBlock struct {
	rec   keystore.Record
	in    Intent
	begun begunIntent
	work  keystore.Record
}

// begunIntentOf is the Intent of blk's record, which Begin built and the
// keystore adopted, with what Begin derived it from: its URL is target's
// string, with no secret query parameters taken out when params is nil.
func begunIntentOf(blk *begunBlock, target *urlMemo, params url.Values, secrets, sent http.Header) *Intent {
	rec := &blk.rec
	blk.in.refresh(rec)
	b := &blk.begun
	b.rec, b.secrets, b.sent, b.work = rec, secrets, sent, &blk.work
	if params == nil { // else rec.URL is another string than u's: the secrets came out of its query
		b.target = target.u
		b.parsed = target.reparses
	}
	blk.in.begun = b
	return &blk.in
}

// attemptRequest is the request of rec's attempts, without header. For
// the record Begin built (begun not nil) whose URL it parsed, the URL is a
// copy of that parse instead of a new one, in a request built as
// http.NewRequestWithContext builds it.
func attemptRequest(ctx context.Context, rec *keystore.Record, begun *begunIntent) (*http.Request, error) {
	if begun == nil || !begun.parsed || ctx == nil || !standardMethod(rec.Method) {
		req, err := http.NewRequestWithContext(ctx, rec.Method, rec.URL, nil)
		if err != nil {
			return nil, fmt.Errorf("idem: rebuilding request: %w", err)
		}
		return req, nil
	}
	// The request owns its copy of the URL: a caller may modify
	// resp.Request.URL. No empty port to strip (reparsesAsItself).
	u := new(url.URL)
	*u = begun.target
	tmpl := http.Request{
		Method: rec.Method, URL: u, Host: u.Host,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
	}
	return tmpl.WithContext(ctx), nil
}

// takeSent returns the header Begin built for the first attempt, once,
// when the secrets the Client keeps for the intent are still the ones
// Begin kept (another Begin of the same name replaces them); nil
// otherwise, and the attempt builds its header from the record and the
// secrets.
func (b *begunIntent) takeSent(secrets http.Header) http.Header {
	if b == nil || !sameMap(b.secrets, secrets) || !b.sentTaken.CompareAndSwap(false, true) {
		return nil
	}
	return b.sent
}

// workRecord returns a record to settle a copy of rec in: the one Begin
// allocated next to rec, the first time, a new one after.
func (b *begunIntent) workRecord() *keystore.Record {
	if b == nil || !b.workTaken.CompareAndSwap(false, true) {
		return new(keystore.Record)
	}
	return b.work
}

// standardMethod reports whether m is one of the methods net/http names,
// which http.NewRequestWithContext accepts; any other goes through it.
func standardMethod(m string) bool {
	switch m {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodGet,
		http.MethodHead, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return true
	}
	return false
}

// provesPrincipal reports whether the attempts of the record Begin built,
// sent with the secret headers secrets and the secret query parameters
// params, carry the very credentials Begin named rec.Principal from: the
// default principal (a function of those values alone), the map of
// secrets Begin kept (another Begin of the same name replaces it), and no
// secret parameters. Without a request editor, which may change them, such
// an attempt needs no second principal fingerprint.
func (c *Client) provesPrincipal(begun *begunIntent, secrets http.Header, params url.Values) bool {
	return begun != nil && c.cfg.principal == nil && c.cfg.editor == nil &&
		len(params) == 0 && sameMap(begun.secrets, secrets)
}

// sameMap reports whether a and b are the same map (not equal ones): both
// nil, or one map.
func sameMap(a, b http.Header) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// reparsesAsItself reports whether url.Parse(u.String()) gives back *u
// field for field, by the form of u alone: an http or https URL with a
// plain host (letters, digits, dots, dashes, an optional numeric port), a
// path of characters that are never escaped, a query without '#' or
// control characters, and none of user information, fragment, opaque
// data, RawPath, ForceQuery or OmitHost. Anything else is parsed again.
func reparsesAsItself(u *url.URL) bool {
	if u.Scheme != "http" && u.Scheme != "https" {
		return false
	}
	if u.Opaque != "" || u.User != nil || u.RawPath != "" || u.ForceQuery || u.OmitHost ||
		u.Fragment != "" || u.RawFragment != "" {
		return false
	}
	return plainHost(u.Host) && plainPath(u.Path) && plainQuery(u.RawQuery)
}

// plainHost: a non-empty name of letters, digits, dots and dashes, with
// an optional ':' and at least one digit of port.
func plainHost(h string) bool {
	if h == "" {
		return false
	}
	colon := -1
	for i := 0; i < len(h); i++ {
		switch b := h[i]; {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9', b == '.', b == '-':
			if colon >= 0 && (b < '0' || b > '9') {
				return false
			}
		case b == ':' && colon < 0 && i > 0:
			colon = i
		default:
			return false
		}
	}
	return colon < 0 || colon < len(h)-1
}

// plainPath: empty, or '/' and then only characters that url.URL.String
// writes as they are and url.Parse reads as they are (no '%').
func plainPath(p string) bool {
	if p == "" {
		return true
	}
	if p[0] != '/' {
		return false
	}
	for i := 0; i < len(p); i++ {
		switch b := p[i]; {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		default:
			switch b {
			case '-', '_', '.', '~', '$', '&', '+', ',', '/', ':', ';', '=', '@':
			default:
				return false
			}
		}
	}
	return true
}

// plainQuery: printable ASCII without '#' (url.Parse cuts the fragment
// off first, and refuses control characters).
func plainQuery(q string) bool {
	for i := 0; i < len(q); i++ {
		if b := q[i]; b <= ' ' || b >= 0x7f || b == '#' {
			return false
		}
	}
	return true
}
