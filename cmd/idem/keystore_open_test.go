package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// holdKeystoreEnv tells the re-executed test binary which keystore to hold.
const holdKeystoreEnv = "IDEM_TEST_HOLD_KEYSTORE"

// TestHelperHoldKeystore is not a test: the lock tests run the test binary
// again with only this function, as another process that opens a
// keystore, says "holding" and keeps it open until its stdin closes.
func TestHelperHoldKeystore(t *testing.T) {
	path := os.Getenv(holdKeystoreEnv)
	if path == "" {
		t.Skip("helper process of the keystore lock tests")
	}
	st, err := keystore.OpenBolt(path, nil)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer st.Close()
	fmt.Println("holding")
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// holdKeystore starts another process that holds the keystore at path
// until the test ends.
func holdKeystore(t *testing.T, path string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldKeystore$", "-test.count=1")
	cmd.Env = append(os.Environ(), holdKeystoreEnv+"="+path)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close() // the holder returns and releases the lock
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "holding\n", line)
}

// newKeystore creates an empty keystore file and returns its path.
func newKeystore(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "idem.db")
	st, err := keystore.OpenBolt(path, &keystore.BoltOptions{NoSync: true})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	return path
}

func TestKeystore_LockedByAnotherProcessIsOneClearLine(t *testing.T) {
	t.Parallel()
	path := newKeystore(t)
	holdKeystore(t, path)

	for _, args := range [][]string{
		{"list"},
		{"show", "some-key"},
		{"resume", "--no-progress"},
		{"purge", "--older-than", "24h"},
	} {
		_, stderr, err := runIntentsCLI(t, nil, append(args, "--keystore", path, "--lock-timeout", "100ms")...)
		requireOneLineError(t, stderr, err)
		assert.ErrorIs(t, err, keystore.ErrLocked, args)
		assert.Contains(t, stderr, "keystore "+path+" is locked: another process holds it (waited 100ms)", args)
	}
}

func TestKeystore_MissingFileIsOneLineAndNotCreated(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "missing.db")
	for _, args := range [][]string{
		{"list"},
		{"show", "some-key"},
		{"resume", "--no-progress"},
		{"purge", "--older-than", "24h"},
	} {
		_, stderr, err := runIntentsCLI(t, nil, append(args, "--keystore", path)...)
		requireOneLineError(t, stderr, err)
		assert.Contains(t, stderr, "keystore "+path+" does not exist", args)
		_, statErr := os.Stat(path)
		assert.True(t, errors.Is(statErr, os.ErrNotExist), "%v created the file", args)
	}
}

func TestKeystore_EnvironmentNamesTheDefault(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	env := map[string]string{keystoreEnv: p.path}

	stdout, _, err := runIntentsCLI(t, env, "list")
	require.NoError(t, err)
	assert.Contains(t, stdout, p.succeeded[0].Key)

	missing := filepath.Join(t.TempDir(), "elsewhere.db")
	_, stderr, err := runIntentsCLI(t, map[string]string{keystoreEnv: missing}, "list")
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stderr, missing)

	_, stderr, err = runIntentsCLI(t, nil, "list", "--keystore", missing)
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stderr, "keystore "+missing+" does not exist")
}

func TestKeystore_NotAKeystoreIsOneLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(garbage, []byte("this is not a keystore\n"), 0o600))
	empty := filepath.Join(dir, "empty.db")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))

	for _, path := range []string{garbage, empty} {
		_, stderr, err := runIntentsCLI(t, nil, "list", "--keystore", path)
		requireOneLineError(t, stderr, err)
		assert.ErrorIs(t, err, keystore.ErrCorrupt)
		assert.Contains(t, stderr, path)
	}

	_, stderr, err := runIntentsCLI(t, nil, "list", "--keystore", dir)
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stderr, "is a directory")
}

func TestKeystore_UnreachablePostgresIsOneLineWithoutPassword(t *testing.T) {
	t.Parallel()
	dsn := "postgres://idem:hunter2@127.0.0.1:1/idem?sslmode=disable&connect_timeout=2"
	_, stderr, err := runIntentsCLI(t, nil, "list", "--keystore", dsn)
	requireOneLineError(t, stderr, err)
	assert.Contains(t, stderr, "127.0.0.1:1")
	assert.NotContains(t, stderr, "hunter2")
}

func TestKeystoreFlags_Display(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "./idem.db", keystoreFlags{location: "./idem.db"}.display())
	assert.Equal(t, "postgres://u:xxxxx@db:5432/x",
		keystoreFlags{location: "postgres://u:secret@db:5432/x"}.display())
	assert.True(t, keystore.IsPostgresLocation("PostgreSQL://db/x"))
	assert.False(t, keystore.IsPostgresLocation("postgres.db"))
}
