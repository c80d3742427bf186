package testenv

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

func TestPauseProxyHoldsBytesUntilResume(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); _ = c.Close() }() // echo
		}
	}()
	p := StartPauseProxy(t, ln.Addr().String())
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	buf := make([]byte, 4)
	echo := func(msg string) error {
		if _, err := c.Write([]byte(msg)); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err := io.ReadFull(c, buf)
		return err
	}
	if err := echo("ping"); err != nil || string(buf) != "ping" {
		t.Fatalf("before pause: %q, %v", buf, err)
	}
	p.Pause()
	var ne net.Error
	if err := echo("held"); err == nil {
		t.Fatal("a paused proxy forwarded")
	} else if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("paused: want a timeout with the connection open, got %v", err)
	}
	p.Resume()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "held" {
		t.Fatalf("after resume: %q, %v", buf, err)
	}
}
