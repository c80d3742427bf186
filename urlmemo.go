package idem

import (
	"net/url"
	"sync/atomic"
)

// urlMemo is a URL as Begin stores it, without user information (a
// credential, kept apart as Authorization): its string, and whether
// url.Parse reads that string back as the URL (reparsesAsItself). A
// service begins most intents at one endpoint, whose URL is then
// formatted and checked once, not on every Begin.
type urlMemo struct {
	u        url.URL
	s        string
	reparses bool
}

// urlMemoSlot holds the Client's last urlMemo.
type urlMemoSlot struct{ p atomic.Pointer[urlMemo] }

// of returns the memo of u without its user information: the last one
// when that equals it field for field, a new one otherwise, which it
// remembers. The memo is shared and read-only.
func (s *urlMemoSlot) of(u *url.URL) *urlMemo {
	bare := *u
	bare.User = nil
	if m := s.p.Load(); m != nil && m.u == bare {
		return m
	}
	m := &urlMemo{u: bare, s: bare.String()}
	m.reparses = reparsesAsItself(&m.u)
	s.p.Store(m)
	return m
}
