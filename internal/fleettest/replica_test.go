package fleettest

import (
	"bufio"
	"errors"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// listeningAddr matches the address in the server's "listening" log line.
var listeningAddr = regexp.MustCompile(`msg=listening addr=(\S+)`)

// replica is one `idem serve` process.
type replica struct {
	addr   string
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // how the process ended, once exited is closed

	mu   sync.Mutex
	logs []string
}

// startReplica runs `idem serve` with args on a free port and waits until
// it listens. The process is killed when the test ends.
func startReplica(t *testing.T, args ...string) *replica {
	t.Helper()
	cmd := exec.Command(idemBinary(t), append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Env = []string{"IDEM_ADMIN_TOKEN=", "IDEM_PRINCIPAL_KEY=fleet tests principal key"}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &replica{cmd: cmd, exited: make(chan struct{})}
	addr := make(chan string, 1)
	logsDone := make(chan struct{})
	go func() {
		defer close(logsDone)
		r.tail(stderr, addr)
	}()
	go func() {
		<-logsDone
		r.err = cmd.Wait()
		close(r.exited)
	}()
	t.Cleanup(func() {
		r.kill()
		<-r.exited
	})
	select {
	case r.addr = <-addr:
	case <-r.exited:
		t.Fatalf("idem serve ended before listening: %v\n%s", r.err, r.logText())
	case <-time.After(30 * time.Second):
		t.Fatalf("idem serve did not listen within 30s:\n%s", r.logText())
	}
	return r
}

func (r *replica) tail(stderr io.Reader, addr chan<- string) {
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		r.mu.Lock()
		r.logs = append(r.logs, line)
		r.mu.Unlock()
		if m := listeningAddr.FindStringSubmatch(line); m != nil {
			addr <- m[1]
		}
	}
}

func (r *replica) logText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.logs, "\n")
}

// kill ends the process with SIGKILL: no drain, no deferred calls.
func (r *replica) kill() { _ = r.cmd.Process.Kill() }

// wait waits for the process to end and reports whether SIGKILL ended it.
func (r *replica) wait(t *testing.T) (killed bool) {
	t.Helper()
	select {
	case <-r.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("idem serve did not exit:\n%s", r.logText())
	}
	var exit *exec.ExitError
	if !errors.As(r.err, &exit) {
		return false
	}
	status, ok := exit.Sys().(syscall.WaitStatus)
	return ok && status.Signaled() && status.Signal() == syscall.SIGKILL
}

// proxy is a round-robin TCP proxy: each new connection goes to the next
// backend that accepts it, so a dead replica is skipped.
type proxy struct {
	ln       net.Listener
	backends []string
	next     atomic.Uint64
	wg       sync.WaitGroup
}

// startProxy listens on a free port and forwards to backends until the
// test ends.
func startProxy(t *testing.T, backends ...string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, backends: backends}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.serve()
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		p.wg.Wait()
	})
	return p
}

// URL is the proxy's base URL.
func (p *proxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.forward(client)
		}()
	}
}

// forward pipes client to the first backend, in round-robin order, that
// accepts a connection; with none, it closes the client connection.
func (p *proxy) forward(client net.Conn) {
	defer client.Close()
	start := p.next.Add(1)
	var backend net.Conn
	for i := range uint64(len(p.backends)) {
		addr := p.backends[(start+i)%uint64(len(p.backends))]
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			backend = conn
			break
		}
	}
	if backend == nil {
		return
	}
	defer backend.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tcp, ok := dst.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(backend, client)
	go pipe(client, backend)
	<-done
	<-done
}
