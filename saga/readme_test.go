package saga_test

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

// The saga example of docs/CLIENT.md compiles against the package as it is:
// pasted into a function, it type-checks and passes go vet.
func TestReadmeSagaExampleCompiles(t *testing.T) {
	t.Parallel()
	goCmd := testenv.GoCommand(t, "compile the saga example of docs/CLIENT.md")
	readme, err := os.ReadFile("../docs/CLIENT.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(readme), "\n## Operations of several calls: package `saga`\n")
	require.True(t, ok, "docs/CLIENT.md has the saga section")
	_, after, ok = strings.Cut(after, "```go\n")
	require.True(t, ok)
	block, _, ok := strings.Cut(after, "\n```")
	require.True(t, ok)
	src := `package readmesaga

import (
	"context"
	"net/http"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/saga"
)

func chargeRequest() *http.Request                              { return nil }
func shipRequest(*http.Response) *http.Request                  { return nil }
func refundRequest(*http.Response) (*http.Request, error)        { return nil, nil }

func checkout(ctx context.Context, client *idem.Client) error {
` + block + `
}
`
	dir := t.TempDir()
	file := filepath.Join(dir, "readme.go")
	require.NoError(t, os.WriteFile(file, []byte(src), 0o600))
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	// The file joins the module through an overlay, as a package in docs
	// (which holds no Go): nothing is written into the source tree.
	overlay, err := json.Marshal(map[string]any{"Replace": map[string]string{
		filepath.Join(root, "docs", "readme_saga.go"): file,
	}})
	require.NoError(t, err)
	overlayFile := filepath.Join(dir, "overlay.json")
	require.NoError(t, os.WriteFile(overlayFile, overlay, 0o600))
	cmd := exec.CommandContext(t.Context(), goCmd, "vet", "-overlay="+overlayFile, "./docs")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the saga example of docs/CLIENT.md does not compile:\n%s\n%s", out, src)
}
