package idem

import (
	"fmt"

	"github.com/idemkit/idem/keystore"
)

// checkIntegrity refuses to send a record whose method, URL or body no
// longer match the fingerprint it was begun with: a damaged keystore must
// never send another amount, or to another address. Only what Begin
// fingerprinted is checked; a checksumming store covers the rest.
//
// Do skips the check for one record only: the one Begin built in this
// process (Intent.begun), when a keystore.Sharer hands back that very
// pointer. Its bytes are then the bytes fingerprinted, by construction:
// Begin computed its Fingerprint from its Method, URL and Body (read into
// a buffer of Begin's own), no one else holds a reference to it (the
// Intent exposes none of them), the Adopter contract forbids Begin and the
// store to modify it, Do settles a shallow copy, and any write of the
// intent replaces the store's entry, so the pointer no longer matches.
func (c *Client) checkIntegrity(rec *keystore.Record) error {
	if Fingerprint(rec.Method, rec.URL, rec.Body) == rec.Fingerprint {
		return nil
	}
	if d := &c.cfg.dialect; d.KeyInBody() {
		// The key was written into the body after it was fingerprinted.
		if Fingerprint(rec.Method, rec.URL, unplacedBody(d, rec.Body, rec.Key)) == rec.Fingerprint {
			return nil
		}
	}
	return fmt.Errorf("idem: intent (key hash %s) does not match its fingerprint: its stored method, URL or body changed; not sent: %w", keyHash(rec.Key), keystore.ErrCorrupt)
}
