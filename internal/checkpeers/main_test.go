package checkpeers_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// idemBinary is the idem command built from this repository for the run.
var idemBinary string

// TestMain builds the idem command once: the tests run `idem check` as a
// user does, as a process with --json.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "checkpeers-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	idemBinary = filepath.Join(dir, "idem")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	goTool, err := goCommand()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	build := exec.CommandContext(ctx, goTool, "build", "-o", idemBinary, "./cmd/idem")
	build.Dir = filepath.Join("..", "..") // the main module
	build.Env = append(os.Environ(), "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the idem command: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// goCommand finds the go command: on PATH, or else in $GOROOT/bin.
func goCommand() (string, error) {
	if path, err := exec.LookPath("go"); err == nil {
		return path, nil
	}
	if root := os.Getenv("GOROOT"); root != "" {
		if path, err := exec.LookPath(filepath.Join(root, "bin", "go")); err == nil {
			return path, nil
		}
	}
	return "", errors.New("no go command on PATH or in $GOROOT: the tests build the idem command with it")
}
