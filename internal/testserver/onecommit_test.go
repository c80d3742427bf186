package testserver_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/server"
)

// One-commit mode on the memory store is refused by New, never served
// as the ordinary mode.
func TestOneCommitRefusedOnTheMemoryStore(t *testing.T) {
	t.Parallel()
	srv, err := testserver.New(testserver.WithOneCommit())
	if srv != nil {
		_ = srv.Close()
	}
	assert.True(t, errors.Is(err, server.ErrOneCommitUnsupported), "%v", err)
}
