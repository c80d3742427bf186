package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// Kinds of contender, as benchserver's flags name them.
const (
	kindPlain       = "plain"
	kindUnprotected = "unprotected"
	kindProtected   = "protected"
)

// contender is one benchserver process serving one handler on one store.
type contender struct {
	kind, store, location string
	before                bool // served by the -before build
	peer                  bool // served by the -peers build (peers.go)
	url                   string
	cmd                   *exec.Cmd
	hc                    *http.Client
	appName               string        // application_name of its Postgres connections
	meter                 *backendMeter // its Postgres backends' CPU, or nil
}

func (c *contender) name() string {
	if c.before {
		return c.kind + ", " + c.store + " (before)"
	}
	return c.kind + ", " + c.store
}

// plan lists the contenders of the stores asked for, and the stores left
// out for want of a URL.
func plan(cfg config) (contenders []*contender, skipped []string) {
	for _, s := range cfg.stores {
		location := map[string]string{"memory": "memory", "postgres": cfg.postgres, "redis": cfg.redis}[s]
		if location == "" {
			skipped = append(skipped, s)
			continue
		}
		kinds := []string{kindUnprotected, kindProtected}
		if s == "memory" {
			kinds = append([]string{kindPlain}, kinds...)
		}
		kinds = append(kinds, extraKinds(s)...)
		for _, k := range kinds {
			contenders = append(contenders, &contender{kind: k, store: s, location: location})
		}
		if cfg.before != "" {
			for _, k := range []string{kindUnprotected, kindProtected} {
				contenders = append(contenders, &contender{kind: k, store: s, location: location, before: true})
			}
		}
		if cfg.peers {
			contenders = append(contenders, peerContenders(s, location)...)
		}
		if s == "postgres" {
			for i, c := range contenders {
				if c.store == s {
					c.appName = appNameOf(c, i)
				}
			}
		}
	}
	return contenders, skipped
}

// runNames are the schema and key prefix of this run's data.
type runNames struct{ schema, prefix string }

// beforeSchema and beforePrefix are those of the -before build's data.
func (n runNames) beforeSchema() string { return n.schema + "_before" }
func (n runNames) beforePrefix() string { return n.prefix + "before:" }

func newRunNames() runNames {
	id := strconv.FormatInt(time.Now().UnixNano()%1e12, 36) + strconv.Itoa(os.Getpid())
	return runNames{schema: "idem_serverbench_" + id, prefix: "idem-serverbench-" + id + ":"}
}

// startTimeout bounds a benchserver's start, connecting to its store
// included.
const startTimeout = 30 * time.Second

// start runs c's benchserver on a free port and waits until it listens.
func (c *contender) start(ctx context.Context, binary string, names runNames) error {
	location := c.location
	if c.appName != "" {
		location = withAppName(location, c.appName)
	}
	// The -before build gets a schema and key prefix of its own: the two
	// builds may create or upgrade their tables differently.
	schema, prefix := names.schema, names.prefix
	if c.before {
		schema, prefix = names.beforeSchema(), names.beforePrefix()
	}
	c.cmd = exec.Command(binary, "-"+c.kind, "127.0.0.1:0,"+location, "-schema", schema, "-prefix", prefix)
	c.cmd.Stderr = os.Stderr
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := c.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.name(), err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				u, _, _ := strings.Cut(rest, " ")
				addr <- u
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case c.url = <-addr:
	case <-time.After(startTimeout):
		return fmt.Errorf("%s did not listen within %v", c.name(), startTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// cpu returns the contender process's CPU time so far.
func (c *contender) cpu(ctx context.Context) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url+"/debug/cpu", nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	us, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: /debug/cpu answered %d %q", c.name(), resp.StatusCode, b)
	}
	return time.Duration(us) * time.Microsecond, nil
}

// stopAll ends every contender process with SIGTERM, then SIGKILL.
func stopAll(cs []*contender) {
	for _, c := range cs {
		if c.cmd != nil && c.cmd.Process != nil {
			_ = c.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, c := range cs {
		if c.cmd == nil || c.cmd.Process == nil {
			continue
		}
		done := make(chan struct{})
		go func() { _ = c.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = c.cmd.Process.Kill()
			<-done
		}
		c.cmd = nil
	}
}

// benchserverBinary returns path, or builds benchserver into a temporary
// directory when path is empty.
func benchserverBinary(ctx context.Context, path string) (string, func(), error) {
	if path != "" {
		return path, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "serverbench")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	bin := filepath.Join(dir, "benchserver")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/idemkit/idem/bench/cmd/benchserver")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("build benchserver (or pass -benchserver): %w", err)
	}
	return bin, cleanup, nil
}

// dropData removes the run's schema and keys from the shared stores.
func dropData(cfg config, names runNames) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if cfg.postgres != "" {
		if conn, err := pgx.Connect(ctx, cfg.postgres); err == nil {
			for _, schema := range []string{names.schema, names.beforeSchema()} {
				_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
			}
			_ = conn.Close(ctx)
		}
	}
	if cfg.redis != "" {
		if opts, err := redis.ParseURL(cfg.redis); err == nil {
			rc := redis.NewClient(opts)
			iter := rc.Scan(ctx, 0, names.prefix+"*", 1000).Iterator()
			var batch []string
			for iter.Next(ctx) {
				if batch = append(batch, iter.Val()); len(batch) == 1000 {
					rc.Unlink(ctx, batch...)
					batch = batch[:0]
				}
			}
			if len(batch) > 0 {
				rc.Unlink(ctx, batch...)
			}
			_ = rc.Close()
		}
	}
}

// loadAverage is the one-minute load average, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
