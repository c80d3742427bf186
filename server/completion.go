package server

import (
	"fmt"
	"time"
)

// ValidateCompletion rejects a completion a store cannot hold: a retention
// below minRetention, the finest expiry the store can keep (a retention
// that rounds to zero would never be kept at all), or a status that is
// not three digits. A minRetention below 1ns counts as 1ns, so a
// retention is always positive.
func ValidateCompletion(c Completion, minRetention time.Duration) error {
	minRetention = max(minRetention, time.Nanosecond)
	if c.Retention < minRetention {
		return fmt.Errorf("retention must be at least %v, got %v", minRetention, c.Retention)
	}
	if c.Response.Status < 100 || c.Response.Status > 999 {
		return fmt.Errorf("cannot store HTTP status %d", c.Response.Status)
	}
	return nil
}
