package testenv

import (
	"crypto/sha256"
	"os"
	"testing"
	"time"
)

// FileState is what a read must leave as it was: the bytes, the size and
// the modification time of a file.
type FileState struct {
	Sum   [32]byte
	Size  int64
	MTime time.Time
}

// StateOf reads path's FileState.
func StateOf(t testing.TB, path string) FileState {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	return FileState{sha256.Sum256(data), info.Size(), info.ModTime()}
}

// Backdate sets path's times in the past, so a write shows in them.
func Backdate(t testing.TB, path string) {
	t.Helper()
	past := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatalf("backdating %s: %v", path, err)
	}
}
