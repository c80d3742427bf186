package testenv

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClosedAddrRefusesConnections(t *testing.T) {
	t.Parallel()
	addr := ClosedAddr(t)
	host, _, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
	_, err = net.Dial("tcp", addr)
	assert.Error(t, err)
}

func TestClosedPortRefusesConnections(t *testing.T) {
	t.Parallel()
	_, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", ClosedPort(t)))
	assert.Error(t, err)
}
