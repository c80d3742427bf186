package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/internal/testenv"
)

// childArgsEnv, when set, makes the test binary run the consumer with
// these arguments (a JSON array) instead of the tests: the consumer as a
// process of its own, for a test to SIGKILL.
const childArgsEnv = "IDEM_CONSUMER_TEST_ARGS"

func TestMain(m *testing.M) {
	if raw, ok := os.LookupEnv(childArgsEnv); ok {
		var args []string
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			fmt.Fprintln(os.Stderr, "consumer test child:", err)
			os.Exit(2)
		}
		os.Exit(cli(context.Background(), args, os.Getenv, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// rig is one test's own queue, exchange and schema on the test broker and
// database, all removed when the test ends.
type rig struct {
	t        *testing.T
	amqpURL  string
	dsn      string
	queue    string
	exchange string
	schema   string
	db       *pgx.Conn
}

func newRig(t *testing.T) *rig {
	t.Helper()
	amqpURL := testenv.AMQPURL(t)
	dsn := testenv.PostgresDSN(t)
	name := "idemtest.consumer." + strings.ToLower(rand.Text())
	r := &rig{t: t, amqpURL: amqpURL, dsn: dsn, queue: name, exchange: name,
		schema: testenv.PostgresSchema(t, dsn, "idemtest_consumer_")}
	t.Cleanup(r.deleteTopology)
	b, err := dialBroker(amqpURL)
	require.NoError(t, err)
	err = b.declare(r.exchange, r.queue)
	b.close()
	require.NoError(t, err)
	// The schema and tables first, so that consumers starting together
	// never race to create them.
	store, err := openStore(t.Context(), dsn, r.schema)
	require.NoError(t, err)
	_, err = newShipments(t.Context(), store)
	_ = store.Close()
	require.NoError(t, err)
	r.db, err = pgx.Connect(t.Context(), testenv.DirectDSN(dsn))
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.db.Close(context.Background()) })
	return r
}

// args are the consumer's flags for this rig, then extra.
func (r *rig) args(extra ...string) []string {
	return append([]string{"-amqp", r.amqpURL, "-postgres", r.dsn, "-queue", r.queue, "-exchange", r.exchange, "-schema", r.schema}, extra...)
}

// config parses the consumer's flags for this rig.
func (r *rig) config(extra ...string) config {
	r.t.Helper()
	cfg, err := parseFlags(r.args(extra...), func(string) string { return "" }, os.Stderr)
	require.NoError(r.t, err)
	return cfg
}

// consume runs a consumer in this process until its queue has been idle
// for idle, and returns what it printed.
func (r *rig) consume(cfg config, idle time.Duration) string {
	r.t.Helper()
	out, wait := r.startConsumer(cfg, idle)
	wait()
	return out.String()
}

// startConsumer starts a consumer in this process that runs until its
// queue has been idle for idle; wait waits for it to end and checks it
// ended well.
func (r *rig) startConsumer(cfg config, idle time.Duration) (out *syncBuffer, wait func()) {
	r.t.Helper()
	cfg.idle = idle
	out = &syncBuffer{}
	ctx, cancel := context.WithTimeout(r.t.Context(), 2*time.Minute)
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, cfg, out) }()
	return out, func() {
		r.t.Helper()
		defer cancel()
		require.NoError(r.t, <-errc, out.String())
	}
}

// waitFor polls cond until it holds, failing the test after a bound.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// publish publishes the given ids with the publisher of the command, each
// copies times.
func (r *rig) publish(prefix string, n, copies int) []string {
	r.t.Helper()
	var out syncBuffer
	code := cli(r.t.Context(), r.args("-publish", fmt.Sprint(n), "-copies", fmt.Sprint(copies), "-id-prefix", prefix), func(string) string { return "" }, &out, os.Stderr)
	require.Zero(r.t, code, out.String())
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%d", prefix, i+1)
	}
	return ids
}

// publishBody publishes one message with the given id and body.
func (r *rig) publishBody(id string, body []byte) {
	r.t.Helper()
	b, err := dialBroker(r.amqpURL)
	require.NoError(r.t, err)
	defer b.close()
	p, err := b.publisher(r.exchange, r.queue)
	require.NoError(r.t, err)
	require.NoError(r.t, p.publish(r.t.Context(), id, body))
}

// shipmentsPerMessage counts the shipment rows of each message id.
func (r *rig) shipmentsPerMessage() map[string]int {
	r.t.Helper()
	rows, err := r.db.Query(r.t.Context(), `SELECT message_id, count(*) FROM `+pgx.Identifier{r.schema, "shipments"}.Sanitize()+` GROUP BY message_id`)
	require.NoError(r.t, err)
	counts := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		require.NoError(r.t, rows.Scan(&id, &n))
		counts[id] = n
	}
	require.NoError(r.t, rows.Err())
	return counts
}

// requireExactlyOneShipmentEach checks every id was shipped once, and
// nothing else was.
func (r *rig) requireExactlyOneShipmentEach(ids []string) {
	r.t.Helper()
	want := make(map[string]int, len(ids))
	for _, id := range ids {
		want[id] = 1
	}
	require.Equal(r.t, want, r.shipmentsPerMessage(), "exactly one shipment per message id, none lost")
}

// queueDepth returns how many messages wait in the queue and how many
// consumers it has.
func (r *rig) queueDepth() (messages, consumers int) {
	r.t.Helper()
	b, err := dialBroker(r.amqpURL)
	require.NoError(r.t, err)
	defer b.close()
	q, err := b.ch.QueueDeclarePassive(r.queue, true, false, false, false, nil)
	require.NoError(r.t, err)
	return q.Messages, q.Consumers
}

// requireQueueDrained checks nothing waits in the queue any more. A
// delivery left unacked would be back in it once its consumer is gone.
func (r *rig) requireQueueDrained() {
	r.t.Helper()
	messages, consumers := r.queueDepth()
	require.Zero(r.t, messages, "messages left in the queue")
	require.Zero(r.t, consumers, "consumers left on the queue")
}

func (r *rig) deleteTopology() {
	conn, err := amqp.DialConfig(r.amqpURL, amqp.Config{Dial: amqp.DefaultDial(brokerTimeout)})
	if err != nil {
		r.t.Errorf("delete queue %s: %v", r.queue, err)
		return
	}
	defer func() { _ = conn.Close() }()
	ch, err := conn.Channel()
	if err != nil {
		r.t.Errorf("delete queue %s: %v", r.queue, err)
		return
	}
	if _, err := ch.QueueDelete(r.queue, false, false, false); err != nil {
		r.t.Errorf("delete queue %s: %v", r.queue, err)
	}
	if err := ch.ExchangeDelete(r.exchange, false, false); err != nil {
		r.t.Errorf("delete exchange %s: %v", r.exchange, err)
	}
}

// countLines counts the lines of out that start with prefix.
func countLines(out, prefix string) int {
	n := 0
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, prefix) {
			n++
		}
	}
	return n
}
