//go:build !race

package frameworks

const raceEnabled = false
