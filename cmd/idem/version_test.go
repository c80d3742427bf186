package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVersionFromBuildInfo(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, writeVersion(&out, versionInfo{Module: "m", Version: "v0.3.0", Revision: "abc123", Modified: true, Go: "go1.26.8"}, false))
	assert.Equal(t, "idem v0.3.0 (go1.26.8) revision abc123 (modified)\n", out.String())
	out.Reset()
	require.NoError(t, writeVersion(&out, versionInfo{Module: "m", Version: "(devel)", Go: "go1.26.8"}, true))
	var v versionInfo
	require.NoError(t, json.Unmarshal(out.Bytes(), &v))
	assert.Equal(t, "(devel)", v.Version)
}

// A binary built from this checkout names its revision.
func TestVersionOfABuiltBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "idem")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.True(t, strings.HasPrefix(string(out), "idem "), "%s", out)
	assert.Contains(t, string(out), "go1.")
}

// A typo one level down gets a suggestion, as at the top.
func TestNestedTypoGetsASuggestion(t *testing.T) {
	t.Parallel()
	root := newRootCommand(func(string) string { return "" })
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"intents", "lst"})
	err := root.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did you mean list?")
}
