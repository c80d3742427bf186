package idem

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/idemkit/idem/keystore"
)

const (
	// ReplayedHeader is the header a server sets on a replay of a stored
	// answer (Idempotent-Replayed: true).
	ReplayedHeader = "Idempotent-Replayed"
	// LocalReplayHeader is the header idem sets on a response it rebuilt
	// from the keystore without asking the server (Idem-Local-Replay: true).
	LocalReplayHeader = "Idem-Local-Replay"
)

// IsReplay reports whether resp repeats an earlier answer instead of
// being the first: a server replay (Idempotent-Replayed: true) or a local
// replay from the keystore. Either way the effect happened once, earlier.
func IsReplay(resp *http.Response) bool {
	if resp == nil {
		return false
	}
	return strings.EqualFold(resp.Header.Get(ReplayedHeader), "true") ||
		strings.EqualFold(resp.Header.Get(LocalReplayHeader), "true")
}

// IsLocalReplay reports whether resp was rebuilt from the keystore
// without a network round trip.
func IsLocalReplay(resp *http.Response) bool {
	return resp != nil && strings.EqualFold(resp.Header.Get(LocalReplayHeader), "true")
}

// notStored reports whether the keystore does not keep the response
// header name: such headers describe one connection, or may carry
// credentials. A session cookie or an authentication nonce belongs to the
// process the server handed it to; a local replay, possibly in another
// process after a restart, goes without them.
func notStored(name string) bool {
	for _, h := range unstoredHeaders {
		// The length first: most names differ in it, and then cost no
		// case-folding compare.
		if len(h) == len(name) && strings.EqualFold(h, name) {
			return true
		}
	}
	return false
}

// unstoredHeaders are the response headers notStored names.
var unstoredHeaders = [...]string{"Connection", "Keep-Alive", "Transfer-Encoding", "Set-Cookie", "Set-Cookie2",
	"Trailer", "Authentication-Info", "Proxy-Authentication-Info"}

// capture reads resp's body (up to MaxBodySize is kept) and returns what
// the keystore stores; resp.Body is replaced so the caller can still read
// the whole body. A body over the limit is stored empty, with truncated
// set, and the caller still reads all of it.
//
// The body is read once: the stored answer and the reader handed to the
// caller share those bytes, which nobody writes to again (a reader cannot
// change them). The stored header is a copy, so the caller may change
// resp.Header freely, also after the keystore has taken the record over.
func capture(resp *http.Response) (stored *keystore.Response, truncated bool, err error) {
	return captureAnswer(resp, false)
}

// captureAnswer is capture; shareHeader says the keystore copies what it
// keeps of the answer before the write returns (storeEncodesSettled), so
// the stored answer may reference resp.Header itself when it holds
// nothing the keystore does not keep.
func captureAnswer(resp *http.Response, shareHeader bool) (stored *keystore.Response, truncated bool, err error) {
	body, err := readUpTo(resp.Body, MaxBodySize+1, resp.ContentLength)
	if err != nil {
		resp.Body.Close()
		return nil, false, fmt.Errorf("idem: reading response body: %w", err)
	}
	// The stored answer and the caller's in-memory body in one allocation.
	both := &struct {
		stored keystore.Response
		body   memoryBody
	}{stored: keystore.Response{Status: resp.StatusCode}}
	stored = &both.stored
	if shareHeader && resp.Header != nil && allStorable(resp.Header) {
		stored.Header = resp.Header
	} else {
		stored.Header = storableHeader(resp.Header)
	}
	if len(body) > MaxBodySize {
		resp.Body = readCloser{io.MultiReader(bytes.NewReader(body), resp.Body), resp.Body}
		return stored, true, nil
	}
	resp.Body.Close()
	both.body.Reset(body)
	resp.Body = &both.body
	resp.ContentLength = int64(len(body))
	stored.Body = body
	return stored, false, nil
}

// allStorable reports whether h holds no header the keystore does not
// keep.
func allStorable(h http.Header) bool {
	for name := range h {
		if notStored(name) {
			return false
		}
	}
	return true
}

// storableHeader copies h without the headers the keystore does not keep,
// all values in one backing array as http.Header.Clone does.
func storableHeader(h http.Header) http.Header {
	n := 0
	for _, values := range h {
		n += len(values)
	}
	backing := make([]string, n)
	out := make(http.Header, len(h))
	for name, values := range h {
		if notStored(name) {
			continue
		}
		if values == nil {
			out[name] = nil
			continue
		}
		k := copy(backing, values)
		out[name] = backing[:k:k]
		backing = backing[k:]
	}
	return out
}

// memoryBody is a response body read into memory: a bytes.Reader that
// closes, in one allocation instead of io.NopCloser's two.
type memoryBody struct{ bytes.Reader }

func (*memoryBody) Close() error { return nil }

func newMemoryBody(b []byte) *memoryBody {
	m := &memoryBody{}
	m.Reset(b)
	return m
}

type readCloser struct {
	io.Reader
	io.Closer
}

// storedResponse rebuilds an *http.Response from the keystore; local marks
// it as a local replay.
func storedResponse(r *keystore.Response, req *http.Request, local bool) *http.Response {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	if local {
		h.Set(LocalReplayHeader, "true")
	}
	return &http.Response{
		Status:        strconv.Itoa(r.Status) + " " + http.StatusText(r.Status),
		StatusCode:    r.Status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          newMemoryBody(r.Body),
		ContentLength: int64(len(r.Body)),
		Request:       req,
	}
}
