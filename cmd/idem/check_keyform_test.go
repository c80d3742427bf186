package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemkit/idem/idemtest"
)

// --key-form quoted grades the reference server, which takes both forms,
// as passing; an unknown form cannot run.
func TestCheck_KeyForm(t *testing.T) {
	t.Parallel()
	ref := idemtest.NewServer(t)
	stdout, _, err := runCheckCLI(t, ref.URL, "--key-form", "quoted")
	assert.Equal(t, 0, exitCode(err), "err: %v\n%s", err, stdout)
	assert.Contains(t, stdout, `k then "k"`)

	stdout, _, err = runCheckCLI(t, ref.URL, "--key-form", "curly")
	assert.Equal(t, 2, exitCode(err), "err: %v\n%s", err, stdout)
	assert.ErrorContains(t, err, "--key-form")
}
