package testserver

// ManualClock is the clock tests move by hand, shared with the tests of
// package testserver_test.
type ManualClock = fakeClock

// NewManualClock returns a ManualClock at a fixed instant.
func NewManualClock() *ManualClock { return newFakeClock() }
