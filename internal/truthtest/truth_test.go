package truthtest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"sort"
	"strconv"
	"testing"
	"time"
)

// fixedSeed starts the scenarios every run plays the same.
const fixedSeed = 20260521

// truthBudget is how many scenarios TestTruth plays: IDEM_TRUTH_N, or 150
// from the fixed seed and 50 from a random one (logged on failure).
func truthBudget() (fixed, random int) {
	if n, err := strconv.Atoi(os.Getenv("IDEM_TRUTH_N")); err == nil && n > 0 {
		return n, 0
	}
	if testing.Short() {
		return 40, 10
	}
	return 150, 50
}

// TestTruth plays generated scenarios against the client and checks, after
// each, that its record is true (see the package doc). A failing scenario
// is printed in full, to be minimised into a TestTruthRegression_ test.
func TestTruth(t *testing.T) {
	fixed, random := truthBudget()
	randomSeed := rand.Uint64()
	mask := MaskFromEnv()
	var failures []string
	classes := map[string]int{}
	var slowest time.Duration
	var slowestSeed uint64
	defer func() { t.Logf("slowest scenario: seed %d, %s", slowestSeed, slowest) }()
	for i := range fixed + random {
		seed := uint64(fixedSeed + i)
		if i >= fixed {
			seed = randomSeed + uint64(i)
		}
		sc := mask.Apply(Generate(NewRandSource(seed)))
		start := time.Now()
		res := Run(sc, t.TempDir())
		if took := time.Since(start); took > slowest {
			slowest, slowestSeed = took, seed
		}
		if !res.Failed() {
			continue
		}
		for _, v := range res.Violations {
			classes[violationClass(v)]++
		}
		if len(failures) < 3 {
			failures = append(failures, fmt.Sprintf("seed %d:\n%s\n%s", seed, sc, res))
		} else {
			failures = append(failures, fmt.Sprintf("seed %d", seed))
		}
	}
	if len(failures) == 0 {
		return
	}
	t.Errorf("%d of %d scenarios broke a property (random seed of this run: %d, scenarios %d on)", len(failures), fixed+random, randomSeed, fixed)
	var names []string
	for c := range classes {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		t.Errorf("  %4d × %s", classes[c], c)
	}
	for _, f := range failures[:min(3, len(failures))] {
		t.Log(f)
	}
}

var (
	keyish    = regexp.MustCompile(`[0-9a-f]{8}(,[0-9a-f]{8})*`)
	numberish = regexp.MustCompile(`order-\d+|\d+`)
	quoted    = regexp.MustCompile(`(error|errors?:) .*$|".*"`)
)

// violationClass folds a violation's keys, names and numbers away, so that
// the same defect found in many scenarios counts as one.
func violationClass(v string) string {
	v = keyish.ReplaceAllString(v, "K")
	v = numberish.ReplaceAllString(v, "N")
	return quoted.ReplaceAllString(v, "…")
}

// FuzzTruth decodes the fuzzer's bytes into a scenario and checks it:
//
//	go test -run '^$' -fuzz FuzzTruth -fuzztime 30m ./internal/truthtest/
//
// IDEM_TRUTH_SKIP leaves dimensions out (see MaskFromEnv).
func FuzzTruth(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"))
	for seed := range uint64(8) {
		src := NewRandSource(fixedSeed + seed)
		b := make([]byte, 96)
		for i := range b {
			b[i] = byte(src.Intn(256))
		}
		f.Add(b)
	}
	mask := MaskFromEnv()
	f.Fuzz(func(t *testing.T, data []byte) {
		sc := mask.Apply(Generate(NewByteSource(data)))
		if res := Run(sc, t.TempDir()); res.Failed() {
			t.Fatalf("%s\n%s", sc, res)
		}
	})
}

// TestTruthSeed replays the one scenario of IDEM_TRUTH_SEED (a seed a
// failing TestTruth printed) and prints it with its trace.
func TestTruthSeed(t *testing.T) {
	seed, err := strconv.ParseUint(os.Getenv("IDEM_TRUTH_SEED"), 10, 64)
	if err != nil {
		t.Skip("set IDEM_TRUTH_SEED to a seed TestTruth printed to replay its scenario")
	}
	sc := MaskFromEnv().Apply(Generate(NewRandSource(seed)))
	res := Run(sc, t.TempDir())
	t.Logf("%s\n%s", sc, res)
	if res.Failed() {
		t.Fail()
	}
}
