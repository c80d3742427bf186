package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// child is a consumer in a process of its own: the test binary re-run
// with childArgsEnv.
type child struct {
	cmd *exec.Cmd
	out *syncBuffer
}

func (r *rig) startChild(args ...string) *child {
	r.t.Helper()
	raw, err := json.Marshal(r.args(args...))
	require.NoError(r.t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childArgsEnv+"="+string(raw))
	c := &child{cmd: cmd, out: &syncBuffer{}}
	cmd.Stdout = c.out
	cmd.Stderr = c.out
	require.NoError(r.t, cmd.Start())
	r.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return c
}

// kill SIGKILLs the child and says where it was in its last message:
// inside the shipment's transaction (midEffect), or between its commit
// and its ack (beforeAck).
func (c *child) kill(t *testing.T) (midEffect, beforeAck bool) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Kill())
	_ = c.cmd.Wait()
	lines := strings.Split(strings.TrimSpace(c.out.String()), "\n")
	last := lines[len(lines)-1]
	return strings.HasPrefix(last, "shipping "), strings.HasPrefix(last, "shipped ")
}

// TestConsumersKilledMidMessage runs two consumer processes on the queue
// and SIGKILLs both at a random moment, round after round, until kills
// have landed both inside a shipment's transaction and between its
// commit and its ack. The shipments are slowed down so that they do.
// Then one last consumer drains the queue: every message must have been
// shipped exactly once.
func TestConsumersKilledMidMessage(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	childArgs := []string{"-v", "-lease", "1s", "-retry-delay", "50ms", "-prefetch", "4",
		"-effect-delay", "20ms", "-ack-delay", "20ms"}
	var ids []string
	batches := 0
	publishBatch := func() {
		batches++
		ids = append(ids, r.publish(fmt.Sprintf("kill-%d-", batches), 10, 2)...)
	}
	publishBatch()
	publishBatch()

	const minRounds, maxRounds = 5, 40
	var midEffect, beforeAck, rounds int
	for rounds < minRounds || midEffect == 0 || beforeAck == 0 {
		require.Less(t, rounds, maxRounds, "kills never landed mid-message (%d inside a transaction, %d before an ack)", midEffect, beforeAck)
		rounds++
		if messages, _ := r.queueDepth(); messages < 10 {
			publishBatch()
		}
		children := []*child{r.startChild(childArgs...), r.startChild(childArgs...)}
		for _, c := range children {
			waitFor(t, "a consumer to take a message", func() bool { return strings.Contains(c.out.String(), "received ") })
		}
		time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond)
		for _, c := range children {
			mid, before := c.kill(t)
			midEffect += btoi(mid)
			beforeAck += btoi(before)
		}
	}
	t.Logf("%d rounds of two consumers SIGKILLed: %d kills inside a shipment's transaction, %d between a commit and its ack; %d message ids",
		rounds, midEffect, beforeAck, len(ids))

	// A taken-over id waits out the lease of the killed consumer: the
	// drain runs until nothing has come for longer than that.
	r.consume(r.config("-lease", "1s", "-retry-delay", "50ms"), 3*time.Second)
	r.requireExactlyOneShipmentEach(ids)
	r.requireQueueDrained()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
