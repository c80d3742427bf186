package testenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisClusterSlots is how many hash slots Redis Cluster has.
const redisClusterSlots = 16384

// redisClusterWait bounds every wait of the cluster harness: a node
// answering, the cluster agreeing on its state.
const redisClusterWait = 30 * time.Second

// RedisCluster is a real Redis Cluster of masters without replicas, each
// a redis-server child process of the test with its own directory, AOF
// (appendfsync always) and cluster config file, on loopback ports. It
// is started by the test itself and killed when the test ends.
type RedisCluster struct {
	tb    testing.TB
	path  string
	nodes []*redisNode
}

// redisNode is one master of a RedisCluster.
type redisNode struct {
	port int
	dir  string
	cmd  *exec.Cmd // nil while killed
	// exited is closed once cmd's process has exited and been waited for.
	exited <-chan struct{}
}

// StartRedisCluster starts a cluster of masters masters, splits the hash
// slots evenly between them and waits until every node says
// cluster_state:ok. It skips the test, saying why, when redis-server is
// not on PATH. The nodes run with cluster-require-full-coverage no, so
// while one master is down the others keep serving their slots.
func StartRedisCluster(tb testing.TB, masters int) *RedisCluster {
	tb.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Skip("redis-server is not on PATH: the Redis Cluster tests start a cluster of their own and need it " +
			"(Debian/Ubuntu: apt-get install redis-server)")
	}
	c := &RedisCluster{tb: tb, path: path}
	tb.Cleanup(c.stop)
	for range masters {
		n := &redisNode{dir: tb.TempDir()}
		c.nodes = append(c.nodes, n)
		// A port found free can be taken before redis-server binds it (by
		// another test process); a node that lost that race gets a new port.
		for attempt := 1; ; attempt++ {
			n.port = freeClusterPort(tb)
			if c.start(n, attempt < redisBindAttempts) {
				break
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), redisClusterWait)
	defer cancel()
	for i, n := range c.nodes {
		client := c.nodeClient(i)
		lo, hi := i*redisClusterSlots/masters, (i+1)*redisClusterSlots/masters-1
		if err := client.ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			tb.Fatalf("redis cluster: add slots %d-%d to :%d: %v", lo, hi, n.port, err)
		}
		if err := client.Do(ctx, "cluster", "set-config-epoch", i+1).Err(); err != nil {
			tb.Fatalf("redis cluster: set config epoch of :%d: %v", n.port, err)
		}
	}
	first := c.nodeClient(0)
	for _, n := range c.nodes[1:] {
		if err := first.ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(n.port)).Err(); err != nil {
			tb.Fatalf("redis cluster: meet :%d: %v", n.port, err)
		}
	}
	c.WaitHealthy()
	return c
}

// redisBindAttempts is how many ports a node tries before the harness
// gives up on starting it.
const redisBindAttempts = 5

// freeClusterPort returns a loopback port that is free, and whose
// cluster bus port (port+10000) is free too. Both lie below the kernel's
// ephemeral range, so outgoing connections of other tests cannot take
// them between this check and redis-server's bind.
func freeClusterPort(tb testing.TB) int {
	tb.Helper()
	const low = 10000
	high := ephemeralLow() - 10000
	if high <= low+1000 {
		high = low + 10000
	}
	for range 100 {
		port := low + rand.N(high-low)
		if portFree(port) && portFree(port+10000) {
			return port
		}
	}
	tb.Fatal("redis cluster: no free port pair found")
	return 0
}

// ephemeralLow returns the first port of the kernel's ephemeral range
// (Linux's default, 32768, where it cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= 0 {
		return 32768
	}
	return n
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// start runs n's redis-server and waits until it answers. When
// retryBind is set and the node exits because its port was taken, start
// returns false so the caller can pick another port; every other failure
// ends the test.
func (c *RedisCluster) start(n *redisNode, retryBind bool) bool {
	c.tb.Helper()
	cmd := exec.Command(c.path,
		"--port", strconv.Itoa(n.port), "--bind", "127.0.0.1",
		"--dir", n.dir, "--logfile", filepath.Join(n.dir, "redis.log"),
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "3000", "--cluster-require-full-coverage", "no",
		"--appendonly", "yes", "--appendfsync", "always", "--save", "",
		"--maxmemory-policy", "noeviction")
	// A test binary killed before its cleanup ran takes its nodes with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		c.tb.Fatalf("redis cluster: start redis-server on :%d: %v", n.port, err)
	}
	n.cmd = cmd
	exited := make(chan struct{})
	n.exited = exited
	go func() { _ = cmd.Wait(); close(exited) }()
	client := redis.NewClient(&redis.Options{Addr: n.addr()})
	defer func() { _ = client.Close() }()
	deadline := time.Now().Add(redisClusterWait)
	for {
		select {
		case <-exited:
			if log := n.log(); retryBind && strings.Contains(log, "Address already in use") {
				c.tb.Logf("redis cluster: :%d was taken before redis-server bound it; trying another port", n.port)
				n.cmd = nil
				_ = os.Remove(filepath.Join(n.dir, "redis.log"))
				return false
			}
			c.tb.Fatalf("redis cluster: redis-server on :%d exited at start; its log: %s", n.port, n.log())
		default:
		}
		dir, err := client.ConfigGet(context.Background(), "dir").Result()
		if err == nil {
			if dir["dir"] != n.dir {
				c.tb.Fatalf("redis cluster: another Redis answers on :%d (dir %q)", n.port, dir["dir"])
			}
			return true
		}
		if time.Now().After(deadline) {
			c.tb.Fatalf("redis cluster: node :%d did not answer within %v; its log: %s", n.port, redisClusterWait, n.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (n *redisNode) addr() string { return "127.0.0.1:" + strconv.Itoa(n.port) }

func (n *redisNode) log() string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "redis.log"))
	return string(b)
}

// nodeClient returns a client of node i alone, closed when the test ends.
func (c *RedisCluster) nodeClient(i int) *redis.Client {
	client := redis.NewClient(&redis.Options{Addr: c.nodes[i].addr()})
	c.tb.Cleanup(func() { _ = client.Close() })
	return client
}

// WaitHealthy waits until every node says cluster_state:ok and knows
// every master as connected.
func (c *RedisCluster) WaitHealthy() {
	c.tb.Helper()
	deadline := time.Now().Add(redisClusterWait)
	for !c.healthy() {
		if time.Now().After(deadline) {
			c.tb.Fatalf("redis cluster: not healthy within %v", redisClusterWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (c *RedisCluster) healthy() bool {
	ctx := context.Background()
	for _, n := range c.nodes {
		client := redis.NewClient(&redis.Options{Addr: n.addr()})
		info, err := client.ClusterInfo(ctx).Result()
		nodes, err2 := client.ClusterNodes(ctx).Result()
		_ = client.Close()
		if err != nil || err2 != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
		up := 0
		for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
			f := strings.Fields(line)
			if len(f) > 7 && strings.Contains(f[2], "master") && !strings.Contains(f[2], "fail") && f[7] == "connected" {
				up++
			}
		}
		if up != len(c.nodes) {
			return false
		}
	}
	return true
}

// URL returns the cluster in go-redis's cluster URL form:
// redis://host:p1?addr=host:p2&addr=host:p3.
func (c *RedisCluster) URL() string {
	var q []string
	for _, n := range c.nodes[1:] {
		q = append(q, "addr="+n.addr())
	}
	return "redis://" + c.nodes[0].addr() + "?" + strings.Join(q, "&")
}

// Addrs returns the host:port of every master, in start order.
func (c *RedisCluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.addr()
	}
	return out
}

// Node returns a client of master i alone (not following redirects), to
// look at what that master holds; closed when the test ends.
func (c *RedisCluster) Node(i int) *redis.Client { return c.nodeClient(i) }

// Kill SIGKILLs master i and waits for it to exit.
func (c *RedisCluster) Kill(i int) {
	c.tb.Helper()
	n := c.nodes[i]
	if n.cmd == nil {
		return
	}
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.tb.Fatalf("redis cluster: kill :%d: %v", n.port, err)
	}
	<-n.exited
	n.cmd = nil
}

// Restart starts killed master i again on its port, directory, AOF and
// cluster config file, and waits until the cluster is healthy.
func (c *RedisCluster) Restart(i int) {
	c.tb.Helper()
	c.start(c.nodes[i], false)
	c.WaitHealthy()
}

// MasterOf returns the index of the master serving key's slot.
func (c *RedisCluster) MasterOf(key string) int {
	slot, m := RedisKeySlot(key), len(c.nodes)
	for i := range m {
		if slot <= (i+1)*redisClusterSlots/m-1 {
			return i
		}
	}
	return m - 1
}

func (c *RedisCluster) stop() {
	for _, n := range c.nodes {
		if n.cmd != nil {
			_ = n.cmd.Process.Kill()
			<-n.exited
			n.cmd = nil
		}
	}
}

// String names the cluster's masters, for messages.
func (c *RedisCluster) String() string {
	return fmt.Sprintf("Redis Cluster %s", strings.Join(c.Addrs(), ","))
}
