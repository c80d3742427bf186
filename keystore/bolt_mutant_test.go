package keystore_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// The mutant tests change one byte of a real keystore file (in
// testdata/mutants/source.db.gz: 200 records folded into the records
// bucket, 40 in the log, a few with bodies over a page) and open, read and
// close each mutant in a child process under a memory limit, watched for
// progress. Each must end with the file's true records or ErrCorrupt:
// never a hang, a crash, runaway memory, or other records.
const (
	mutantSourceGz = "testdata/mutants/source.db.gz"
	mutantJobEnv   = "IDEM_KEYSTORE_MUTANT_JOB"
	// mutantsEnv raises the number of random mutants (default below).
	mutantsEnv = "IDEM_KEYSTORE_MUTANTS"
	// mutantSeed makes the random mutants the same on every run.
	mutantSeed = 21
	// mutantMemLimit is the child's address space: a runaway ends in an
	// allocation failure, not in the machine's swap.
	mutantMemLimit = 2 << 30
	// mutantStall is how long the child may go without finishing a
	// mutant before it counts as hung (a bound on a wait, not a timing
	// assertion: a sound mutant takes milliseconds).
	mutantStall = 60 * time.Second
)

// mutant sets the byte at Off to Val.
type mutant struct {
	Off int  `json:"off"`
	Val byte `json:"val"`
}

func (m mutant) String() string { return fmt.Sprintf("byte %d = %#02x", m.Off, m.Val) }

// knownBadMutants ran out of memory (2 GiB) in OpenBolt, List or Close
// before pages were checked (found among the header mutants and 3,000
// random ones of seed 21): bbolt trusted a page's element count or an
// element's value size and read, copied and iterated what lay beyond.
var knownBadMutants = map[string]mutant{
	// page 71's element count grows by 128: its elements run past the
	// page, into the next ones, read as keys and values.
	"page-71-count":  {Off: 71*4096 + 10, Val: 131},
	"page-115-count": {Off: 115*4096 + 10, Val: 131},
	// page 18, element 1: a value size of 1.6 GB, copied by the fold at
	// Close.
	"page-18-element-1-value-size": {Off: 18*4096 + 16 + 16 + 15, Val: 100},
}

// mutantJob is what the parent hands the child.
type mutantJob struct {
	Source  string   `json:"source"`
	Mutants []mutant `json:"mutants"`
	// Dir is where the child writes its mutants: the parent's, removed by
	// the parent even when it had to kill the child.
	Dir string `json:"dir"`
}

// TestBoltMutantChild is the child side: it runs the job named by
// mutantJobEnv, printing "start I" before and "done I VERDICT" after
// mutant I. A verdict other than ok or corrupt names what went wrong.
func TestBoltMutantChild(t *testing.T) {
	jobPath := os.Getenv(mutantJobEnv)
	if jobPath == "" {
		t.Skip("runs only as the child process of the mutant tests")
	}
	lim := syscall.Rlimit{Cur: mutantMemLimit, Max: mutantMemLimit}
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_AS, &lim))
	raw, err := os.ReadFile(jobPath)
	require.NoError(t, err)
	var job mutantJob
	require.NoError(t, json.Unmarshal(raw, &job))
	src, err := os.ReadFile(job.Source)
	require.NoError(t, err)
	want := trueRecords(t, src, job.Dir)
	path := filepath.Join(job.Dir, "mutant.db")
	out := bufio.NewWriter(os.Stdout)
	for i, m := range job.Mutants {
		fmt.Fprintf(out, "start %d\n", i)
		out.Flush()
		verdict := "ok"
		for _, ro := range []bool{true, false} {
			data := bytes.Clone(src)
			data[m.Off] = m.Val
			require.NoError(t, os.WriteFile(path, data, 0o600))
			if v := judgeMutant(path, ro, want); v != "ok" {
				verdict = v
				if v != "corrupt" {
					break
				}
			}
		}
		fmt.Fprintf(out, "done %d %s\n", i, verdict)
		out.Flush()
	}
}

// trueRecords lists the records of the sound file.
func trueRecords(t *testing.T, src []byte, dir string) map[string]*keystore.Record {
	path := filepath.Join(dir, "source.db")
	require.NoError(t, os.WriteFile(path, src, 0o600))
	s, err := keystore.OpenBolt(path, &keystore.BoltOptions{ReadOnly: true})
	require.NoError(t, err)
	defer s.Close()
	recs, err := s.List(context.Background(), keystore.Filter{})
	require.NoError(t, err)
	want := map[string]*keystore.Record{}
	for _, r := range recs {
		want[r.Key] = r
	}
	return want
}

// judgeMutant opens the file at path (read-only or not), lists it, reads
// every record by key and by name, and closes it (which folds the log,
// when not read-only). It returns "ok" when every answer is true,
// "corrupt" when something failed with ErrCorrupt and every answer given
// was true, else what went wrong. A lookup that misses is true enough
// here: a damaged key reads as absent (see PROTOCOL.md).
func judgeMutant(path string, ro bool, want map[string]*keystore.Record) string {
	ctx := context.Background()
	verdict := "ok"
	check := func(what string, err error) bool {
		switch {
		case err == nil:
			return true
		case errors.Is(err, keystore.ErrCorrupt):
			if !strings.HasPrefix(verdict, "WRONG") {
				verdict = "corrupt"
			}
			return false
		default:
			if !strings.HasPrefix(verdict, "WRONG") {
				verdict = fmt.Sprintf("WRONG (%s, read-only %t): %v", what, ro, err)
			}
			return false
		}
	}
	s, err := keystore.OpenBolt(path, &keystore.BoltOptions{ReadOnly: ro, NoSync: true, Timeout: time.Second})
	if !check("open", err) {
		return verdict
	}
	v := readMutant(ctx, s, ro, want, check)
	err = s.Close() // always: the next mutant opens the same path
	if err != nil && !errors.Is(err, keystore.ErrCorrupt) && v == "" {
		return fmt.Sprintf("WRONG (close, read-only %t): %v", ro, err)
	}
	if v != "" {
		return v
	}
	return verdict
}

// readMutant lists s and reads every record by key and name; it returns
// what went wrong, or "" when every answer was true or ErrCorrupt (which
// check records).
func readMutant(ctx context.Context, s *keystore.Bolt, ro bool, want map[string]*keystore.Record, check func(string, error) bool) string {
	recs, err := s.List(ctx, keystore.Filter{})
	check("list", err)
	if err == nil && len(recs) != len(want) {
		return fmt.Sprintf("WRONG (list, read-only %t): %d records of %d, no error", ro, len(recs), len(want))
	}
	for _, r := range recs {
		if w := want[r.Key]; w == nil || !reflect.DeepEqual(w, r) {
			return fmt.Sprintf("WRONG (list, read-only %t): record %s changed", ro, keystore.KeyRef(r.Key))
		}
	}
	for key, w := range want {
		if !ro {
			break // the lookups read the same pages either way
		}
		for _, get := range []func() (*keystore.Record, error){
			func() (*keystore.Record, error) { return s.Get(ctx, key) },
			func() (*keystore.Record, error) { return s.GetByName(ctx, w.Name) },
		} {
			r, err := get()
			if errors.Is(err, keystore.ErrNotFound) {
				continue
			}
			if check("get", err) && !reflect.DeepEqual(w, r) {
				return fmt.Sprintf("WRONG (get, read-only %t): record %s changed", ro, keystore.KeyRef(key))
			}
		}
	}
	return ""
}

// mutantSource writes the sound source file into a temporary directory
// and returns its path and bytes.
func mutantSource(t *testing.T) (string, []byte) {
	f, err := os.Open(mutantSourceGz)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	data, err := io.ReadAll(zr)
	require.NoError(t, err)
	data = data[:sourcePageSize(data)*sourcePages(data)] // the rest is room to grow
	path := filepath.Join(t.TempDir(), "source.db")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path, data
}

// randomMutants returns n mutants of data, the same for the same seed:
// a random byte of its pages in use set to a random other value (the
// rest of the file is room to grow, which nothing reads).
func randomMutants(data []byte, seed uint64, n int) []mutant {
	rng := rand.New(rand.NewPCG(seed, seed))
	inUse := min(len(data), sourcePageSize(data)*sourcePages(data))
	out := make([]mutant, n)
	for i := range out {
		off := rng.IntN(inUse)
		v := byte(rng.IntN(255))
		if v >= data[off] {
			v++
		}
		out[i] = mutant{off, v}
	}
	return out
}

// headerMutants returns, for every page of data (or every so many), its
// type byte set to each type bbolt knows, and a high bit of its count and
// overflow flipped: the bytes a cursor trusts.
func headerMutants(data []byte, pageSize, every int) []mutant {
	var out []mutant
	for p := 0; p < sourcePages(data); p += every {
		at := p * pageSize
		for _, flag := range []byte{0x01, 0x02, 0x04, 0x10} {
			if data[at+8] != flag {
				out = append(out, mutant{at + 8, flag})
			}
		}
		out = append(out, mutant{at + 10, data[at+10] ^ 0x80}, mutant{at + 12, data[at+12] ^ 0x40})
	}
	return out
}

// runMutants runs mutants in child processes and returns the verdict of
// each that was not ok or corrupt, by index. A child that stalls is
// killed and its mutant counted as hung; one that dies counts its mutant
// as crashed; either way a new child goes on from the next mutant.
func runMutants(t *testing.T, source string, mutants []mutant) map[int]string {
	bad := map[int]string{}
	dir := t.TempDir()
	for from := 0; from < len(mutants); {
		jobPath := filepath.Join(dir, fmt.Sprintf("job-%d.json", from))
		raw, err := json.Marshal(mutantJob{Source: source, Mutants: mutants[from:], Dir: dir})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(jobPath, raw, 0o600))
		next, verdicts := runMutantChild(t, jobPath)
		for i, v := range verdicts {
			bad[from+i] = v
		}
		from += next
	}
	return bad
}

// runMutantChild runs one child on the job at jobPath and returns how many
// of its mutants it got through (the one it stalled or died on included)
// and the bad verdicts among them.
func runMutantChild(t *testing.T, jobPath string) (int, map[int]string) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestBoltMutantChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), mutantJobEnv+"="+jobPath)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	bad := map[int]string{}
	current, finished := -1, 0
	stall := time.NewTimer(mutantStall)
	defer stall.Stop()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				err := cmd.Wait()
				if current >= 0 {
					bad[current] = fmt.Sprintf("CRASH: child died (%v): %s", err, why(stderr.String()))
					return current + 1, bad
				}
				require.Positive(t, finished, "the child ran no mutant: %v\n%s", err, stderr.String())
				return finished, bad
			}
			stall.Reset(mutantStall)
			f := strings.SplitN(line, " ", 3)
			if len(f) < 2 {
				continue // the test framework's own lines
			}
			i, err := strconv.Atoi(f[1])
			if err != nil {
				continue
			}
			switch f[0] {
			case "start":
				current = i
			case "done":
				current, finished = -1, i+1
				if len(f) == 3 && f[2] != "ok" && f[2] != "corrupt" {
					bad[i] = f[2]
				}
			}
		case <-stall.C:
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			bad[current] = fmt.Sprintf("HANG: no answer in %s", mutantStall)
			return current + 1, bad
		}
	}
}

// why is the first lines of a dead child's stderr from its fatal error
// or panic on.
func why(stderr string) string {
	for _, mark := range []string{"fatal error:", "panic:"} {
		if i := strings.Index(stderr, mark); i >= 0 {
			stderr = stderr[i:]
			break
		}
	}
	return stderr[:min(len(stderr), 300)]
}

// sourcePageSize reads the page size from the source's first meta page.
func sourcePageSize(data []byte) int {
	return int(binary.NativeEndian.Uint32(data[16+8:]))
}

// sourcePages is the number of pages in use (the larger of the two meta
// pages' high-water marks).
func sourcePages(data []byte) int {
	ps := sourcePageSize(data)
	return int(max(binary.NativeEndian.Uint64(data[16+40:]), binary.NativeEndian.Uint64(data[ps+16+40:])))
}

// TestBoltMutantsEndInResultOrCorrupt runs every page header mutant of
// the source file and a seeded sample of random single-byte mutants
// (IDEM_KEYSTORE_MUTANTS sets how many; 150 by default; with -short, 40
// and the headers of every eighth page).
func TestBoltMutantsEndInResultOrCorrupt(t *testing.T) {
	t.Parallel()
	source, data := mutantSource(t)
	n, every := 150, 1
	if testing.Short() {
		n, every = 40, 8
	}
	if v := os.Getenv(mutantsEnv); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err, mutantsEnv)
	}
	mutants := append(headerMutants(data, sourcePageSize(data), every), randomMutants(data, mutantSeed, n)...)
	bad := runMutants(t, source, mutants)
	for i, v := range bad {
		t.Errorf("mutant %d (%s): %s", i, mutants[i], v)
	}
	t.Logf("%d mutants (%d page header, %d random, seed %d): %d bad", len(mutants), len(mutants)-n, n, mutantSeed, len(bad))
}

// TestBoltKnownBadMutants runs the mutants that hung before pages were
// checked, one named subtest each.
func TestBoltKnownBadMutants(t *testing.T) {
	t.Parallel()
	source, _ := mutantSource(t)
	for name, m := range knownBadMutants {
		t.Run(name, func(t *testing.T) {
			bad := runMutants(t, source, []mutant{m})
			require.Empty(t, bad, m.String())
		})
	}
}

// TestWriteMutantSource writes testdata/mutants/source.db.gz when
// IDEM_WRITE_MUTANT_SOURCE is set: the file the mutant tests damage, kept
// so that a mutant names the same byte of the same file on every run.
func TestWriteMutantSource(t *testing.T) {
	if os.Getenv("IDEM_WRITE_MUTANT_SOURCE") == "" {
		t.Skip("set IDEM_WRITE_MUTANT_SOURCE=1 to rewrite " + mutantSourceGz)
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keys.db")
	create := func(s *keystore.Bolt, from, to int) {
		for i := from; i < to; i++ {
			r := pendingRecord(fmt.Sprintf("key-%03d", i), fmt.Sprintf("order-%03d", i))
			r.Body = fmt.Appendf(nil, `{"amount":%d,"memo":%q}`, 100+i, strings.Repeat("x", i%7*40))
			if i%50 == 7 {
				r.Body = bytes.Repeat([]byte("b"), 6000) // over a page
			}
			_, _, err := s.Create(ctx, r)
			require.NoError(t, err)
		}
	}
	s, err := keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	create(s, 0, 200)
	require.NoError(t, s.Close()) // folds the log into the records bucket
	s, err = keystore.OpenBolt(path, nil)
	require.NoError(t, err)
	create(s, 200, 240)
	data, err := os.ReadFile(path) // committed, the 40 still in the log
	require.NoError(t, err)
	require.NoError(t, s.Close())
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err = zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.MkdirAll(filepath.Dir(mutantSourceGz), 0o755))
	require.NoError(t, os.WriteFile(mutantSourceGz, buf.Bytes(), 0o644))
	t.Logf("%d bytes, %d gzipped", len(data), buf.Len())
}
