package idem

import "github.com/idemkit/idem/keystore"

// For the external tests of the scheduled purge (package idem_test,
// which may import package saga).
var (
	WithClockForTest = withClock
	PurgeNowForTest  = func(c *Client) (keystore.PurgeResult, error) { return c.purgeNow() }
)
