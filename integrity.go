package idem

import (
	"fmt"

	"github.com/idemkit/idem/keystore"
)

// checkIntegrity refuses to send a record whose method, URL or body no
// longer match the fingerprint it was begun with: a damaged keystore must
// never send another amount, or to another address. Only what Begin
// fingerprinted is checked; a checksumming store covers the rest.
func (c *Client) checkIntegrity(rec *keystore.Record) error {
	if Fingerprint(rec.Method, rec.URL, rec.Body) == rec.Fingerprint {
		return nil
	}
	if f := c.cfg.dialect.KeyField; f != "" {
		// The key was written into the body after it was fingerprinted.
		if Fingerprint(rec.Method, rec.URL, withoutBodyKey(rec.Body, f, rec.Key)) == rec.Fingerprint {
			return nil
		}
	}
	return fmt.Errorf("idem: intent (key hash %s) does not match its fingerprint: its stored method, URL or body changed; not sent: %w", keyHash(rec.Key), keystore.ErrCorrupt)
}
