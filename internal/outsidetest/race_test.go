//go:build race

package outsidetest

// raceEnabled says the tests run under the race detector, so the nested
// test modules they run are run with it too.
const raceEnabled = true
