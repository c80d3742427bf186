package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crashRoundsEnv multiplies the rounds of TestCrashAtEveryBoundary: 1 by
// default, every boundary once for an order that completes and one the
// carrier refuses.
const crashRoundsEnv = "IDEM_ORDERS_CRASH_ROUNDS"

// crashCase is one boundary for one kind of order.
type crashCase struct {
	point  string
	refuse bool // the carrier refuses the shipment: the run compensates
}

// crashCases are the boundaries each kind of order crosses: the refund's
// only when refused; the relay's and the consumer's once, for an order
// that completes. Without a broker the relay's and consumer's are left
// out.
func crashCases(broker bool) []crashCase {
	var out []crashCase
	for _, p := range crashPoints {
		relay := strings.HasPrefix(p, "publish-") || strings.HasPrefix(p, "consume-")
		if relay && !broker {
			continue
		}
		if !strings.HasPrefix(p, "refund-") {
			out = append(out, crashCase{point: p})
		}
		if !relay {
			out = append(out, crashCase{point: p, refuse: true})
		}
	}
	return out
}

// Every phase boundary of an order, the process SIGKILLed there: the
// order is placed with a process that kills itself at the boundary (the
// API, completer, relay and consumer all in it), then a second process
// takes over, the client retrying the same request with the same key.
// Each order ends completed (one charge, one booking) or compensated
// (one charge, one refund, nothing booked), never stuck, with one order
// row, one outbox row and one receipt (the paid message consumed once).
func TestCrashAtEveryBoundary(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	t.Parallel()
	rounds := 1
	if v := os.Getenv(crashRoundsEnv); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, crashRoundsEnv)
		require.Positive(t, n, crashRoundsEnv)
		rounds = n
	}
	p := newProviders(t)
	broker := os.Getenv("IDEM_TEST_AMQP") != ""
	if !broker {
		t.Log("IDEM_TEST_AMQP is not set: the relay's and the consumer's boundaries, and the receipts, are left out")
	}
	cases := crashCases(broker)
	var kills, completed, compensated, retried202 atomic.Int64
	t.Run("rounds", func(t *testing.T) {
		for round := range rounds {
			for _, c := range cases {
				name := fmt.Sprintf("%d/%s/refuse=%t", round, c.point, c.refuse)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					st, answered202 := crashRound(t, p, c, fmt.Sprintf("crash-%d-%s-%t", round, c.point, c.refuse))
					kills.Add(1)
					if answered202 {
						retried202.Add(1)
					}
					if st == stateCompleted {
						completed.Add(1)
					} else {
						compensated.Add(1)
					}
				})
			}
		}
	})
	t.Logf("%d rounds of %d boundaries: %d processes SIGKILLed at their boundary; %d orders completed (one charge, one booking each), %d compensated (one charge, one refund each); %d retries answered 202 and finished by the completer; broker: %t",
		rounds, len(cases), kills.Load(), completed.Load(), compensated.Load(), retried202.Load(), broker)
}

// crashRound places one order through a child killed at c.point, takes
// it over with a service in this process, and checks every effect was
// made once. It returns the order's final state and whether the retry was
// answered 202.
func crashRound(t *testing.T, p providersRig, c crashCase, key string) (string, bool) {
	r := newRig(t, p)
	body := `{"amount":1500,"currency":"EUR","ship_to":"FR"}`
	if c.refuse {
		body = `{"amount":1500,"currency":"EUR","ship_to":"ZZ"}`
	}
	out := runChildUntilKilled(t, r, c.point, key, body)
	require.Contains(t, out, "killed at "+c.point, "the kill landed at its boundary")

	base, svcOut, stop := r.serve()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the child said:\n%s\nthe service that took over said:\n%s", out, lastLines(svcOut.String(), 40))
		}
	})
	status, doc := postUntilAnswered(t, base, "tenant-a", key, body)
	id := doc["id"]
	require.NotEmpty(t, id, "status %d: %v", status, doc)
	state := r.waitSettled(id)
	stop()

	tb := newTables(r.schema)
	assert.Equal(t, 1, count(p.provider, id), "one charge")
	assert.Equal(t, 1, r.rows(tb.outbox, id), "one paid message in the outbox")
	if r.queue != "" {
		assert.Equal(t, 1, r.rows(tb.receipts, id), "the paid message consumed once")
	}
	if c.refuse {
		require.Equal(t, stateCompensated, state)
		assert.Equal(t, 1, count(p.provider, "refund-"+id), "one refund")
		assert.Zero(t, count(p.carrier, "ship-"+id), "nothing booked")
		assert.True(t, status == 424 || status == 202, "the retry's answer: %d", status)
	} else {
		require.Equal(t, stateCompleted, state)
		assert.Equal(t, 1, count(p.carrier, "ship-"+id), "one booking")
		assert.Zero(t, count(p.provider, "refund-"+id), "no refund")
		assert.True(t, status == 201 || status == 202, "the retry's answer: %d", status)
	}
	return state, status == 202
}

// runChildUntilKilled starts the service as a child process that kills
// itself at point, places the order on it, and returns what the child
// printed once it has died.
func runChildUntilKilled(t *testing.T, r *rig, point, key, body string) string {
	t.Helper()
	raw, err := json.Marshal(r.args())
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(slices.Clone(os.Environ()), childArgsEnv+"="+string(raw), CrashEnv+"="+point)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	base := waitListening(t, out)
	// The client sends the order, and again while the child lives (a
	// 503 of a slow store executed nothing), until the child has died.
	deadline := time.After(waitBound)
	for done := false; !done; {
		_, _, _ = post(base, "tenant-a", key, body) // the child may die answering
		select {
		case err = <-exited:
			done = true
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("the child never reached %s:\n%s", point, out.String())
		}
	}
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the child ended: %v\n%s", err, out.String())
	ws, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the child died of SIGKILL: %v\n%s", err, out.String())
	return out.String()
}
