package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// GoCommand returns the go command, from PATH or else $GOROOT/bin, or
// skips the test, saying it needs the command for what.
func GoCommand(tb testing.TB, what string) string {
	tb.Helper()
	if path, err := exec.LookPath("go"); err == nil {
		return path
	}
	if root := os.Getenv("GOROOT"); root != "" {
		path := filepath.Join(root, "bin", "go")
		if _, err := exec.LookPath(path); err == nil {
			return path
		}
	}
	tb.Skipf("no go command on PATH or in $GOROOT, which this test needs to %s", what)
	return ""
}
