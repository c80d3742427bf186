package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitServeDefaultsToMemory(t *testing.T) {
	t.Parallel()
	addr, location := splitServe("127.0.0.1:1")
	assert.Equal(t, "127.0.0.1:1", addr)
	assert.Equal(t, "memory", location)
	addr, location = splitServe("127.0.0.1:2,postgres://u@h/db?sslmode=disable&pool_max_conns=16")
	assert.Equal(t, "127.0.0.1:2", addr)
	assert.Equal(t, "postgres://u@h/db?sslmode=disable&pool_max_conns=16", location)
}

func TestOpenStoreRejectsUnknownStoresWithoutLeakingPasswords(t *testing.T) {
	t.Parallel()
	st, err := openStore(context.Background(), "memory", storeNames{})
	require.NoError(t, err)
	assert.Nil(t, st, "memory means the reference server's own store")

	_, err = openStore(context.Background(), "mysql://user:hunter2@host/db", storeNames{})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "hunter2")
}

func TestRunFailsOnAnUnknownStore(t *testing.T) {
	t.Parallel()
	err := run(context.Background(), []string{"-protected", "127.0.0.1:0,nosuch://x"})
	assert.ErrorContains(t, err, "unsupported store")
}
