//go:build !race

package outsidetest

const raceEnabled = false
