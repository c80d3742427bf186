package testenv

import (
	"net"
	"testing"
)

// ClosedAddr returns a local TCP address (127.0.0.1:port) nothing listens
// on, for tests of what a client does when its server is not there.
func ClosedAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("find a closed port: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		tb.Fatalf("find a closed port: %v", err)
	}
	return addr
}

// ClosedPort returns a local TCP port nothing listens on.
func ClosedPort(tb testing.TB) string {
	tb.Helper()
	_, port, err := net.SplitHostPort(ClosedAddr(tb))
	if err != nil {
		tb.Fatalf("find a closed port: %v", err)
	}
	return port
}
