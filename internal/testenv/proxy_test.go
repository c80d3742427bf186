package testenv

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoServer answers every line it reads with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

func TestProxyForwardsUntilCut(t *testing.T) {
	t.Parallel()
	p := StartProxy(t, echoServer(t))
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(time.Minute)))
	r := bufio.NewReader(c)

	_, err = c.Write([]byte("ping\n"))
	require.NoError(t, err)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "ping\n", line)

	p.Cut()
	_, err = r.ReadString('\n')
	assert.Error(t, err, "a forwarded connection ends when the proxy is cut")
	_, err = net.Dial("tcp", p.Addr())
	assert.Error(t, err, "a cut proxy accepts no new connection")
	p.Cut()
}
