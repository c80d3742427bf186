package idem_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// readmeGoBlock returns the first ```go block after heading in file
// (README.md or a page under docs/).
func readmeGoBlock(t *testing.T, file, heading string) string {
	t.Helper()
	readme, err := os.ReadFile(file)
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(readme), "\n"+heading+"\n")
	require.True(t, ok, "%s has the heading %q", file, heading)
	_, after, ok = strings.Cut(after, "```go\n")
	require.True(t, ok, "a go block follows %q", heading)
	block, _, ok := strings.Cut(after, "\n```")
	require.True(t, ok)
	return block
}

// The README's client example, its error handling switch included,
// compiles against the package as it is: pasted into a function, it
// type-checks and passes go vet. (.ci/readme runs the sh blocks; this
// keeps the Go one honest.)
func TestReadmeClientExampleCompiles(t *testing.T) {
	t.Parallel()
	goCmd := testenv.GoCommand(t, "compile the README's example")
	block := readmeGoBlock(t, "README.md", "### A service calling a payment API")
	require.Contains(t, block, "default:", "the error switch is complete: whatever it does not name is an unknown outcome")
	src := `package readmeusing

import (
	"context"
	"errors"
	"log"
	"net/http"
	"strings"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

func usingTheClient(ctx context.Context, token string) error {
` + block + `
	_ = resp
	return nil
}
`
	vetReadmeSource(t, goCmd, src)
}

// vetReadmeSource type-checks and vets src, a file of the package in
// docs, without writing into the source tree.
func vetReadmeSource(t *testing.T, goCmd, src string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "readme.go")
	require.NoError(t, os.WriteFile(file, []byte(src), 0o600))
	wd, err := os.Getwd()
	require.NoError(t, err)
	// The file joins the module through an overlay, as a package in docs
	// (which holds no Go): nothing is written into the source tree.
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{
		filepath.Join(wd, "docs", "readme_example.go"): file,
	}})
	require.NoError(t, err)
	overlayFile := filepath.Join(dir, "overlay.json")
	require.NoError(t, os.WriteFile(overlayFile, overlay, 0o600))
	cmd := exec.CommandContext(t.Context(), goCmd, "vet", "-overlay="+overlayFile, "./docs")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the README's example does not compile:\n%s\n%s", out, src)
}

// docs/MIDDLEWARE.md's handler that calls a provider (BeginTx,
// DownstreamKey, CompleteTx) compiles against the packages as they are.
func TestReadmeBeginTxExampleCompiles(t *testing.T) {
	t.Parallel()
	goCmd := testenv.GoCommand(t, "compile the README's example")
	block := readmeGoBlock(t, "docs/MIDDLEWARE.md", "## Calling a provider from a guarded handler")
	require.Contains(t, block, "BeginTx(")
	require.Contains(t, block, "server.DownstreamKey(")
	src := `package readmebegintx

import (
	"log"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/server"
	"github.com/idemkit/idem/server/pgstore"
)

type ordersAPI struct {
	pool          *pgxpool.Pool
	client        *idem.Client
	store         *pgstore.Store
	provider      string
	providerToken string
}

` + block + "\n"
	vetReadmeSource(t, goCmd, src)
}

// The README's contract test (idemtest.NewServer, a lost answer, one
// payment) compiles against the packages as they are.
func TestReadmeContractTestExampleCompiles(t *testing.T) {
	t.Parallel()
	goCmd := testenv.GoCommand(t, "compile the README's example")
	block := readmeGoBlock(t, "README.md", "### A team writing contract tests")
	require.Contains(t, block, "idemtest.NewServer(t)")
	src := `package readmecontract

import (
	"net/http"
	"strings"
	"testing"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

` + block + "\n"
	vetReadmeSource(t, goCmd, src)
}

// The README's loop that resumes unknown outcomes in a long-running
// service compiles against the package as it is, and stays bounded and
// stoppable: it returns when its context ends.
func TestReadmeResumeLoopCompiles(t *testing.T) {
	t.Parallel()
	goCmd := testenv.GoCommand(t, "compile the README's example")
	block := readmeGoBlock(t, "README.md", "### Who resumes an unknown outcome")
	require.Contains(t, block, "case <-ctx.Done():")
	require.Contains(t, block, "ClaimPending(ctx, limit)")
	require.Contains(t, block, "context.WithTimeout(ctx, perIntent)")
	src := `package readmeresumeloop

import (
	"context"
	"errors"
	"log"
	"time"

	"github.com/idemkit/idem"
)

` + block + "\n"
	vetReadmeSource(t, goCmd, src)
}
