//go:build race

package frameworks

// raceEnabled says the tests run under the race detector, so the service
// binary is built with it too.
const raceEnabled = true
