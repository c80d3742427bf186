package idem

import (
	"fmt"
	"net/http"
)

// checkBodyUnread refuses body, the bytes read from req's body, when they
// show the body was read before (ErrBodyConsumed): fewer bytes than the
// ContentLength it declares, or none at all from a Body that is neither
// nil nor http.NoBody and has no GetBody to read it afresh. net/http
// gives an empty body of a known length http.NoBody, so an empty read of
// any other Body is what a drained one gives; storing it would make an
// empty payment, another one, under the intent's key.
func checkBodyUnread(req *http.Request, body []byte) error {
	switch {
	case req.ContentLength > 0 && int64(len(body)) != req.ContentLength:
		return fmt.Errorf("%w: it yields %d bytes of the %d it declares (give the request a GetBody, or a fresh body)", ErrBodyConsumed, len(body), req.ContentLength)
	case len(body) == 0 && req.GetBody == nil && req.Body != nil && req.Body != http.NoBody:
		return fmt.Errorf("%w: it yields no bytes and has no GetBody (give the request a GetBody or a fresh body; an empty body is http.NoBody)", ErrBodyConsumed)
	}
	return nil
}
