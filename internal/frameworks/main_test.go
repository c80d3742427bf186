package frameworks

import (
	"flag"
	"os"
	"testing"
)

// TestMain runs the cells four at a time (two under the race detector)
// unless -parallel says otherwise: a cell spends most of its time waiting
// on handlers and backoffs, not on a CPU.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		parallel := "4"
		if raceEnabled {
			parallel = "2"
		}
		_ = flag.Set("test.parallel", parallel)
	}
	os.Exit(m.Run())
}
