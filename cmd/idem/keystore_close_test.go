//go:build unix

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/keystore/pgkeystore"
)

// cliArgsEnv carries the arguments of `idem` to the re-executed test
// binary, separated by the unit separator (0x1f).
const cliArgsEnv = "IDEM_TEST_CLI_ARGS"

// TestHelperIntentsCLI is not a test: the read-only tests run the test
// binary again with only this function, as `idem` run by another user,
// with the arguments in cliArgsEnv and its exit status as the command's.
func TestHelperIntentsCLI(t *testing.T) {
	args := os.Getenv(cliArgsEnv)
	if args == "" {
		t.Skip("helper process of the read-only keystore tests")
	}
	code, _ := run(t.Context(), strings.Split(args, "\x1f"), os.Stdout, os.Stderr, os.Getenv)
	os.Exit(code)
}

// runCLIUnprivileged runs `idem args…` in another process that the
// file permissions bind: as user nobody when the tests run as root (who
// may write any file), else as the test's own user. The test binary is
// copied where that user may run it.
func runCLIUnprivileged(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	self, err := os.ReadFile(os.Args[0])
	require.NoError(t, err)
	bin := filepath.Join(dir, "idem.test")
	require.NoError(t, os.WriteFile(bin, self, 0o755))
	cmd := exec.Command(bin, "-test.run=^TestHelperIntentsCLI$", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), cliArgsEnv+"="+strings.Join(args, "\x1f"))
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), errOut.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errOut.String(), 0
}

// A keystore on a read-only mount, as an operator meets it: the file mode
// 0444 in a directory of mode 0555, read by a user the permissions bind.
// list and show succeed and leave the file's bytes (sha256), size and
// time as they were; a command that writes is refused in the same place,
// which shows the file really could not be written.
func TestReadCommands_WorkOnAReadOnlyKeystore(t *testing.T) {
	t.Parallel()
	p := populateKeystore(t)
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		require.NoError(t, os.Chmod(d, 0o755)) // reachable by the other user
	}
	roDir := filepath.Join(base, "ro")
	require.NoError(t, os.Mkdir(roDir, 0o755))
	path := filepath.Join(roDir, "idem.db")
	data, err := os.ReadFile(p.path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o444))
	testenv.Backdate(t, path)
	require.NoError(t, os.Chmod(roDir, 0o555))
	t.Cleanup(func() { _ = os.Chmod(roDir, 0o755) }) // so the temporary directory can be removed
	before := testenv.StateOf(t, path)

	in := p.all()[0]
	for _, args := range [][]string{
		{"list"}, {"list", "--json"}, {"show", in.Key}, {"show", in.Name, "--json"},
	} {
		stdout, stderr, code := runCLIUnprivileged(t, base, append([]string{"intents"}, append(args, "--keystore", path)...)...)
		assert.Equal(t, 0, code, "%v: %s", args, stderr)
		assert.Empty(t, stderr, "%v", args)
		assert.Contains(t, stdout, in.Key, "%v", args)
		assert.Equal(t, before, testenv.StateOf(t, path), "%v changed the keystore file", args)
	}

	_, stderr, code := runCLIUnprivileged(t, base, "intents", "purge", "--older-than", "48h", "--dry-run", "--keystore", path)
	assert.NotEqual(t, 0, code, "a command that opens the keystore for writing must fail here")
	assert.Contains(t, stderr, "permission denied")
	assert.Equal(t, before, testenv.StateOf(t, path))
}

// closeStore, which list and show defer, makes a failed close the
// command's error (a store closed already fails its Close with
// ErrClosed), and never hides an earlier error behind it.
func TestCloseStore_ReportsAFailedClose(t *testing.T) {
	t.Parallel()
	path := newKeystore(t)
	f := keystoreFlags{location: path, lockTimeout: keystore.DefaultBoltTimeout,
		schema: pgkeystore.DefaultSchema, table: pgkeystore.DefaultTable}
	st, err := f.openReadOnly(t.Context())
	require.NoError(t, err)
	require.NoError(t, st.Close())

	var cmdErr error
	f.closeStore(st, &cmdErr)
	require.ErrorIs(t, cmdErr, keystore.ErrClosed)
	assert.Equal(t, fmt.Sprintf("closing keystore %s: %v", path, keystore.ErrClosed), cmdErr.Error())

	earlier := io.ErrUnexpectedEOF
	cmdErr = earlier
	f.closeStore(st, &cmdErr)
	assert.Same(t, earlier, cmdErr, "the command's own error is kept")
}
