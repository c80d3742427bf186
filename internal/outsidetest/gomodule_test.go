package outsidetest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemkit/idem/internal/testenv"
)

// modulePath is this repository's module, as an outside go.mod requires it.
const modulePath = "github.com/idemkit/idem"

// buildTimeout bounds one go build: a cold build cache on a busy machine
// compiles the dependencies too.
const buildTimeout = 5 * time.Minute

// repository returns the absolute directory of this repository and the
// go version its go.mod declares, after checking that it is modulePath.
func repository(t *testing.T) (root, goVersion string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	goVersion, err = goDirective(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatalf("reading the repository's go.mod: %v", err)
	}
	if goVersion == "" {
		t.Fatalf("%s/go.mod has no go directive", root)
	}
	return root, goVersion
}

// goDirective returns the version of the go line of the go.mod at path,
// and fails unless the module is modulePath.
func goDirective(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var module, version string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		switch {
		case len(fields) == 2 && fields[0] == "module":
			module = fields[1]
		case len(fields) == 2 && fields[0] == "go":
			version = fields[1]
		}
	}
	if module != modulePath {
		return "", fmt.Errorf("%s declares module %q, want %q", path, module, modulePath)
	}
	return version, nil
}

// writeOutsideModule makes dir a module of its own, named name, that
// requires this repository through a replace directive to its absolute
// path; go.sum starts as this repository's, which holds every checksum
// the outside module can need. files maps names in dir to contents.
func writeOutsideModule(t *testing.T, dir, name string, files map[string][]byte) {
	t.Helper()
	root, version := repository(t)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	goMod := fmt.Sprintf("module %s\n\ngo %s\n\nrequire %s v0.0.0\n\nreplace %s => %s\n",
		name, version, modulePath, modulePath, root)
	all := map[string][]byte{"go.mod": []byte(goMod), "go.sum": sum}
	for name, content := range files {
		all[name] = content
	}
	for name, content := range all {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// offlineEnv is the environment of a go command run in the outside
// module. Its go.mod lists only this repository, so -mod=mod lets the go
// command add the indirect requirements the imports need (whatever GOFLAGS
// the caller set, such as CI's -mod=readonly); GOPROXY=off resolves them
// from the module cache alone, which fillModuleCache has filled, and the
// copied go.sum verifies them; GOWORK=off keeps a go.work of the caller's
// out; GOTOOLCHAIN=local never fetches a toolchain.
func offlineEnv(t *testing.T) []string {
	t.Helper()
	fillModuleCache(t)
	return append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
}

// moduleCache runs `go mod download` in this repository once per test
// process.
var moduleCache struct {
	once   sync.Once
	output []byte
	err    error
}

// fillModuleCache makes sure the module cache holds every module of this
// repository's graph, as `go mod download` fetches them, with the
// caller's environment (its proxy, or the cache alone when offline). A
// `go test ./...` on a fresh machine downloads only the modules the
// repository's own packages build with; the outside module's graph also
// needs the go.mod of versions nothing here builds (an older
// go-logr/logr a dependency names), which the offline build could not
// fetch.
func fillModuleCache(t *testing.T) {
	t.Helper()
	moduleCache.once.Do(func() {
		root, _ := repository(t)
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, testenv.GoCommand(t, "build an outside module"), "mod", "download")
		cmd.Dir = root
		cmd.WaitDelay = 10 * time.Second
		moduleCache.output, moduleCache.err = cmd.CombinedOutput()
	})
	if moduleCache.err != nil {
		t.Fatalf("go mod download in the repository (for the outside module's offline build): %v\n%s", moduleCache.err, moduleCache.output)
	}
}

// goBuild runs `go build -o out pkg` in dir with env and returns the
// combined output; the error is non-nil when the build failed.
func goBuild(t *testing.T, dir string, env []string, out, pkg string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, testenv.GoCommand(t, "build an outside module"), "build", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 10 * time.Second
	output, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("go build %s in %s did not finish within %s:\n%s", pkg, dir, buildTimeout, output)
	}
	return output, err
}

// mustBuild is goBuild that fails the test when the build fails.
func mustBuild(t *testing.T, dir string, env []string, out, pkg string) {
	t.Helper()
	if output, err := goBuild(t, dir, env, out, pkg); err != nil {
		t.Fatalf("go build %s in %s: %v\n%s", pkg, dir, err, output)
	}
}
