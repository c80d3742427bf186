package redisstore

import (
	"context"
	"crypto/rand"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// testURL returns the Redis server the tests use, or skips the test.
func testURL(tb testing.TB) string {
	tb.Helper()
	rawURL := os.Getenv("IDEM_TEST_REDIS")
	if rawURL == "" {
		tb.Skip("IDEM_TEST_REDIS is not set; set it to a Redis URL " +
			"(e.g. redis://127.0.0.1:6379/0) to run the Redis store tests")
	}
	return rawURL
}

// newPrefix returns a key prefix no other test uses and deletes every key
// under it when the test ends, so tests running in parallel (and other
// packages' tests on the same server) never see each other's keys.
func newPrefix(tb testing.TB, rawURL string) string {
	tb.Helper()
	prefix := "idemtest:" + rand.Text() + ":"
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		opts, err := redis.ParseURL(rawURL)
		if err != nil {
			tb.Errorf("clean up %s: %v", prefix, err)
			return
		}
		client := redis.NewClient(opts)
		defer client.Close()
		iter := client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			client.Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			tb.Errorf("clean up %s: %v", prefix, err)
		}
	})
	return prefix
}

// openStore opens a store under prefix, closed when the test ends.
func openStore(tb testing.TB, rawURL, prefix string, opts ...Option) *Store {
	tb.Helper()
	s, err := Open(context.Background(), rawURL, append([]Option{WithPrefix(prefix)}, opts...)...)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// closedPort returns a local TCP port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return port
}

// proxy forwards TCP connections to target until cut, which closes the
// listener and every forwarded connection: the server vanishes from the
// client's point of view.
type proxy struct {
	listener net.Listener
	target   string
	mu       sync.Mutex
	cutOff   bool
	conns    []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{listener: l, target: target}
	go p.serve()
	t.Cleanup(p.cut)
	return p
}

func (p *proxy) serve() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.mu.Lock()
		if p.cutOff {
			p.mu.Unlock()
			_ = client.Close()
			_ = server.Close()
			return
		}
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		go func() { _, _ = io.Copy(server, client); _ = server.Close() }()
		go func() { _, _ = io.Copy(client, server); _ = client.Close() }()
	}
}

func (p *proxy) cut() {
	_ = p.listener.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOff = true
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// urlVia returns rawURL with its address replaced by the proxy's.
func (p *proxy) urlVia(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	u.Host = p.listener.Addr().String()
	return u.String()
}

// targetOf returns the host:port url points at.
func targetOf(t *testing.T, rawURL string) string {
	t.Helper()
	opts, err := redis.ParseURL(rawURL)
	require.NoError(t, err)
	return opts.Addr
}
