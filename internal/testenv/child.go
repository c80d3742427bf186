package testenv

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// KillAtRandom starts cmd, a child process that prints "ready" once it
// has begun its work, lets it work for a random time from least to
// least+spread, SIGKILLs it and returns the lines it printed. Its standard
// output goes to a file, so every line it wrote before the kill is read.
func KillAtRandom(tb testing.TB, cmd *exec.Cmd, least, spread time.Duration) []string {
	tb.Helper()
	out, err := os.Create(filepath.Join(tb.TempDir(), "child-stdout"))
	require.NoError(tb, err)
	defer out.Close()
	cmd.Stdout = out
	require.NoError(tb, cmd.Start())
	require.Eventually(tb, func() bool {
		b, _ := os.ReadFile(out.Name())
		return strings.Contains(string(b), "ready\n")
	}, 10*time.Second, 5*time.Millisecond, "the child started")
	time.Sleep(least + rand.N(spread))
	require.NoError(tb, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	b, err := os.ReadFile(out.Name())
	require.NoError(tb, err)
	return strings.Split(string(b), "\n")
}
