package redisstore

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

func TestAssessConfig(t *testing.T) {
	t.Parallel()
	safe := serverConfig{appendOnly: "yes", appendFsync: "always", save: "3600 1", maxMemory: "0", maxMemoryPolicy: "noeviction"}
	cases := map[string]struct {
		edit               func(*serverConfig)
		refusals, warnings []string // substrings, in order
	}{
		"safe":               {edit: func(*serverConfig) {}},
		"nothing persists":   {edit: func(c *serverConfig) { c.appendOnly, c.save = "no", "" }, refusals: []string{"persists nothing"}},
		"snapshots only":     {edit: func(c *serverConfig) { c.appendOnly = "no" }, warnings: []string{"only RDB snapshots"}},
		"fsync every second": {edit: func(c *serverConfig) { c.appendFsync = "everysec" }, warnings: []string{"appendfsync is everysec"}},
		"allkeys-lru":        {edit: func(c *serverConfig) { c.maxMemory, c.maxMemoryPolicy = "1gb", "allkeys-lru" }, refusals: []string{"allkeys-lru"}},
		"volatile-ttl":       {edit: func(c *serverConfig) { c.maxMemory, c.maxMemoryPolicy = "100", "volatile-ttl" }, refusals: []string{"volatile-ttl"}},
		"volatile-lru":       {edit: func(c *serverConfig) { c.maxMemory, c.maxMemoryPolicy = "100", "volatile-lru" }, refusals: []string{"all carry a TTL"}},
		"policy idle":        {edit: func(c *serverConfig) { c.maxMemoryPolicy = "allkeys-random" }, warnings: []string{"no maxmemory is set yet"}},
		"evicts and volatile": {edit: func(c *serverConfig) {
			c.appendOnly, c.save, c.maxMemory, c.maxMemoryPolicy = "no", "", "1", "allkeys-lfu"
		}, refusals: []string{"allkeys-lfu", "persists nothing"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := safe
			tc.edit(&c)
			a := assessConfig(c)
			require.Len(t, a.refusals, len(tc.refusals), "refusals %q", a.refusals)
			for i, want := range tc.refusals {
				assert.Contains(t, a.refusals[i], want)
			}
			require.Len(t, a.warnings, len(tc.warnings), "warnings %q", a.warnings)
			for i, want := range tc.warnings {
				assert.Contains(t, a.warnings[i], want)
			}
		})
	}
}

// Against the real test Redis, read only: Open refuses exactly when the
// server's own configuration is unsafe (the CI Redis persists nothing, so
// there it refuses), and the override opens it with the reasons logged.
func TestOpenChecksTheServersConfiguration(t *testing.T) {
	t.Parallel()
	url := testenv.RedisURL(t)
	ctx := t.Context()
	opts, err := redis.ParseURL(url)
	require.NoError(t, err)
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	cfg, err := readServerConfig(ctx, client)
	require.NoError(t, err)
	unsafe := len(assessConfig(cfg).refusals) > 0
	t.Logf("test Redis: appendonly=%s save=%q maxmemory=%s policy=%s", cfg.appendOnly, cfg.save, cfg.maxMemory, cfg.maxMemoryPolicy)

	s, err := Open(ctx, url)
	if unsafe {
		require.ErrorIs(t, err, ErrUnsafeServer)
	} else {
		require.NoError(t, err)
		_ = s.Close()
	}

	var logs strings.Builder
	s, err = Open(ctx, url, WithAllowVolatile(), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	_ = s.Close()
	if unsafe {
		assert.Contains(t, logs.String(), "UNSAFE")
	}
}

// A server whose CONFIG command is disabled (renamed, as managed services
// do) cannot be checked: Open proceeds and warns.
func TestOpenWarnsWhenConfigIsDisabled(t *testing.T) {
	t.Parallel()
	addr := fakeRedisWithoutConfig(t)
	var logs strings.Builder
	s, err := Open(t.Context(), "redis://"+addr+"/0", WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	require.NoError(t, err)
	_ = s.Close()
	assert.Contains(t, logs.String(), "persistence and eviction are unchecked")
}

// fakeRedisWithoutConfig serves RESP on a loopback port: PING answers
// PONG, every other command (HELLO and CONFIG among them) an unknown
// command error, as a Redis with CONFIG renamed away would.
func fakeRedisWithoutConfig(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go serveWithoutConfig(conn)
		}
	}()
	return ln.Addr().String()
}

func serveWithoutConfig(conn net.Conn) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		reply := "-ERR unknown command '" + args[0] + "'\r\n"
		if strings.EqualFold(args[0], "PING") {
			reply = "+PONG\r\n"
		}
		if _, err := conn.Write([]byte(reply)); err != nil {
			return
		}
	}
}

// readCommand reads one RESP array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	var n int
	if _, err := fmt.Sscanf(line, "*%d", &n); err != nil || n < 1 {
		return nil, errors.New("not a RESP command")
	}
	args := make([]string, n)
	for i := range args {
		if _, err := r.ReadString('\n'); err != nil { // $len
			return nil, err
		}
		arg, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		args[i] = strings.TrimRight(arg, "\r\n")
	}
	return args, nil
}
