package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Kinds of peer contender, as internal/peerbench/cmd/peerserver's flags
// name them: the same payments app on Fiber v2, behind Fiber's
// idempotency middleware (github.com/gofiber/fiber/v2/middleware/idempotency)
// or without it.
const (
	kindFiberUnprotected = "fiber-unprotected"
	kindFiberProtected   = "fiber-idempotency"
)

// peerLibrary names the peer library and its version, as
// internal/peerbench/go.mod pins it.
const peerLibrary = "github.com/gofiber/fiber/v2 v2.52.15, middleware/idempotency"

// peerContenders are the Fiber contenders of store.
func peerContenders(store, location string) []*contender {
	return []*contender{
		{kind: kindFiberUnprotected, store: store, location: location, peer: true},
		{kind: kindFiberProtected, store: store, location: location, peer: true},
	}
}

// peerModule is internal/peerbench, a module of its own so that Fiber
// never becomes a dependency of idem.
func peerModule() (string, error) {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	dir := filepath.Join(filepath.Dir(strings.TrimSpace(string(gomod))), "internal", "peerbench")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("the peer servers' module: %w (run serverbench from its repository, or pass -peerserver)", err)
	}
	return dir, nil
}

// peerBuildTimeout bounds building the peer server: a cold build cache on
// a busy machine compiles Fiber too.
const peerBuildTimeout = 10 * time.Minute

// peerserverBinary returns path, or builds internal/peerbench/cmd/peerserver
// into a temporary directory when path is empty.
func peerserverBinary(ctx context.Context, path string) (string, func(), error) {
	if path != "" {
		return path, func() {}, nil
	}
	mod, err := peerModule()
	if err != nil {
		return "", nil, err
	}
	dir, err := os.MkdirTemp("", "serverbench-peers")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	bin := filepath.Join(dir, "peerserver")
	ctx, cancel := context.WithTimeout(ctx, peerBuildTimeout)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/peerserver")
	build.Dir = mod
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("build the peer server in %s (or pass -peerserver): %w", mod, err)
	}
	return bin, cleanup, nil
}

// reportPeers compares idem's protected server with Fiber's middleware on
// each store, and each with its own unprotected app.
func reportPeers(out io.Writer, cfg config, cs []*contender, results [][]round) {
	if !cfg.peers {
		return
	}
	throughput := func(a, b round) float64 { return a.perSecond / b.perSecond }
	cpuDiff := func(a, b round) float64 { return float64(a.cpuPerRequest-b.cpuPerRequest) / float64(time.Microsecond) }
	row := func(a, b int, label string) {
		if a < 0 || b < 0 {
			return
		}
		fmt.Fprintf(out, "| %s | **%s** | %s |\n", label,
			spreadOf(perRound(results[a], results[b], throughput)).format("%.2f"),
			spreadOf(perRound(results[a], results[b], cpuDiff)).format("%+.1f"))
	}
	fmt.Fprintln(out)
	fmt.Fprintf(out, "Peer: %s.\n\n", peerLibrary)
	fmt.Fprintln(out, "| comparison | throughput ratio | CPU µs/request difference |")
	fmt.Fprintln(out, "|---|---:|---:|")
	for _, store := range cfg.stores {
		p, fp := find(cs, kindProtected, store, false), find(cs, kindFiberProtected, store, false)
		fu := find(cs, kindFiberUnprotected, store, false)
		row(p, fp, "idem protected / Fiber idempotency, "+store)
		row(fp, fu, "Fiber idempotency / Fiber unprotected, "+store)
	}
}
