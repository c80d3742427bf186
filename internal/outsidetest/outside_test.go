package outsidetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
)

// The shop's routes and test hook, as testdata/shop/main.go defines them.
const (
	shopRoute       = "/shop/v1/charges"
	shopDelayHeader = "X-Shop-Delay: 150ms"
)

// checkTimeout bounds one `idem check` run (its own --timeout is shorter).
const checkTimeout = 2 * time.Minute

// everyCheck is every check `idem check --profile idem` reports: a report
// that leaves one out has not judged the server on it.
var everyCheck = []string{
	idemtest.CheckFirstRequest, idemtest.CheckValidKeys, idemtest.CheckReplay, idemtest.CheckKeyReuse,
	idemtest.CheckMissingKey, idemtest.CheckInvalidKey, idemtest.CheckQuotedKey, idemtest.CheckConcurrent,
	idemtest.CheckInProgress, idemtest.CheckPrincipalScope, idemtest.CheckErrorNotStored,
	idemtest.CheckProblemDetails, idemtest.CheckReplayHeader, idemtest.CheckProblemTypes, idemtest.CheckRetryAfter,
}

// TestOutsideServicePassesIdemCheck builds the shop, a module of its own
// that guards its charges routes with package server, and the idem CLI,
// then requires `idem check --profile idem --strict` to pass every check
// against the shop, keys in memory and, with IDEM_TEST_POSTGRES, in
// PostgreSQL through server/pgstore.
func TestOutsideServicePassesIdemCheck(t *testing.T) {
	testenv.GoCommand(t, "build an outside module")
	root, _ := repository(t)
	dir := t.TempDir()
	shopDir := filepath.Join(dir, "shop")
	if err := os.Mkdir(shopDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeOutsideModule(t, shopDir, "example.com/shop", testdataFiles(t, filepath.Join("testdata", "shop")))
	shop := filepath.Join(dir, "shop-server")
	mustBuild(t, shopDir, offlineEnv(t), shop, ".")
	idem := filepath.Join(dir, "idem")
	mustBuild(t, root, os.Environ(), idem, "./cmd/idem")

	t.Run("memory", func(t *testing.T) {
		s := startService(t, shop)
		requireCheckPasses(t, idem, s, shopDir)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := testenv.PostgresDSN(t)
		schema := testenv.PostgresSchema(t, dsn, "outsidetest_")
		s := startService(t, shop, "-postgres", dsn, "-schema", schema)
		requireCheckPasses(t, idem, s, shopDir)
	})
}

// TestOutsideModuleCannotImportInternal shows the boundary the shop is
// built across: a module outside idem that imports one of idem's internal
// packages does not compile. So what the shop compiles against is the
// public API.
func TestOutsideModuleCannotImportInternal(t *testing.T) {
	testenv.GoCommand(t, "build an outside module")
	dir := t.TempDir()
	const internalPkg = modulePath + "/internal/canonjson"
	writeOutsideModule(t, dir, "example.com/intruder", map[string][]byte{
		"main.go": []byte("package main\n\nimport _ \"" + internalPkg + "\"\n\nfunc main() {}\n"),
	})
	output, err := goBuild(t, dir, offlineEnv(t), filepath.Join(dir, "intruder"), ".")
	if err == nil {
		t.Fatalf("an outside module importing %s compiled; the shop's build proves nothing:\n%s", internalPkg, output)
	}
	if want := "use of internal package " + internalPkg + " not allowed"; !strings.Contains(string(output), want) {
		t.Fatalf("go build failed, but not with %q:\n%s", want, output)
	}
}

// testdataFiles reads every file of dir, by name.
func testdataFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := make(map[string][]byte, len(entries))
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = data
	}
	return files
}

// checkReport is the part of `idem check --json` the test reads.
type checkReport struct {
	Passed  int                    `json:"passed"`
	Failed  int                    `json:"failed"`
	Skipped int                    `json:"skipped"`
	Error   string                 `json:"error"`
	Checks  []idemtest.CheckResult `json:"checks"`
}

// requireCheckPasses runs `idem check` against the shop's routes and
// requires exit status 0 and every check of everyCheck passed.
func requireCheckPasses(t *testing.T, idem string, s *service, shopDir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), checkTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, idem, "check", s.url,
		"--endpoint", shopRoute, "--list-endpoint", shopRoute,
		"--body-template", filepath.Join(shopDir, "charge.json.tmpl"),
		"--invalid-body-template", filepath.Join(shopDir, "invalid-charge.json.tmpl"),
		"--slow-header", shopDelayHeader,
		"--profile", idemtest.ProfileIdem, "--strict", "--json", "--timeout", "90s")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	runErr := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("idem check did not finish within %s:\n%s\nservice log:\n%s", checkTimeout, stderr.String(), s.log())
	}
	var report checkReport
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("idem check --json printed no JSON document (%v; exit %v):\n%s\n%s", err, runErr, stdout.String(), stderr.String())
	}
	for _, c := range report.Checks {
		t.Logf("%-22s %-6s passed=%-5t skipped=%-5t %s", c.ID, c.Level, c.Passed, c.Skipped, c.Detail)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(runErr, &exit):
		t.Errorf("idem check exited %d (%d passed, %d failed, %d skipped): %s%s",
			exit.ExitCode(), report.Passed, report.Failed, report.Skipped, stderr.String(), report.Error)
	case runErr != nil:
		t.Fatalf("idem check: %v", runErr)
	}
	byID := make(map[string]idemtest.CheckResult, len(report.Checks))
	for _, c := range report.Checks {
		byID[c.ID] = c
	}
	for _, id := range everyCheck {
		c, ok := byID[id]
		switch {
		case !ok:
			t.Errorf("%s: not in the report", id)
		case !c.Passed:
			t.Errorf("%s (%s, %s): passed=false skipped=%t: %s", id, c.Level, c.Ref, c.Skipped, c.Detail)
		}
	}
	if t.Failed() {
		t.Logf("service log:\n%s", s.log())
	}
}
