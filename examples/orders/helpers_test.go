package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/internal/testenv"
)

// childArgsEnv, when set, makes the test binary run the command with
// these arguments (a JSON array) instead of the tests: the service as a
// process of its own, for a crash test to kill.
const childArgsEnv = "IDEM_ORDERS_TEST_ARGS"

func TestMain(m *testing.M) {
	if raw, ok := os.LookupEnv(childArgsEnv); ok {
		var args []string
		if err := json.Unmarshal([]byte(raw), &args); err != nil {
			fmt.Fprintln(os.Stderr, "orders test child:", err)
			os.Exit(2)
		}
		os.Exit(cli(context.Background(), args, os.Getenv, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// testToken is the API's credential at the provider and the carrier.
const testToken = "sk_test_orders"

// providersRig is the provider and the carrier, reference servers in
// Stripe's dialect.
type providersRig struct {
	provider, carrier *idemtest.Server
}

func newProviders(t *testing.T) providersRig {
	t.Helper()
	return providersRig{
		provider: idemtest.NewServer(t, idemtest.WithDialect("stripe")),
		carrier:  idemtest.NewServer(t, idemtest.WithDialect("stripe")),
	}
}

// count is how many payments srv made under reference.
func count(srv *idemtest.Server, reference string) int {
	n := 0
	for _, p := range srv.Payments(testToken) {
		if p.Reference == reference {
			n++
		}
	}
	return n
}

// rig is one schema and, when IDEM_TEST_AMQP is set, one queue of the
// test's own, and the arguments of a service on them.
type rig struct {
	t         *testing.T
	dsn       string
	schema    string
	queue     string // "" without a broker
	amqpURL   string
	providers providersRig
	db        *pgx.Conn
}

func newRig(t *testing.T, p providersRig) *rig {
	t.Helper()
	dsn := testenv.PostgresDSN(t)
	r := &rig{t: t, dsn: dsn, schema: testenv.PostgresSchema(t, dsn, "idem_orders_"), providers: p}
	if url := os.Getenv(testenv.AMQPEnv); url != "" {
		r.amqpURL = url
		r.queue = "idemtest.orders." + r.schema
		t.Cleanup(func() { deleteQueue(url, r.queue) })
	}
	var err error
	r.db, err = pgx.Connect(t.Context(), testenv.DirectDSN(dsn))
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.db.Close(context.Background()) })
	return r
}

// deleteQueue removes a test's queue.
func deleteQueue(url, queue string) {
	conn, err := amqp.Dial(url)
	if err != nil {
		return
	}
	defer conn.Close()
	if ch, err := conn.Channel(); err == nil {
		_, _ = ch.QueueDelete(queue, false, false, false)
	}
}

// args are the service's flags on this rig: short leases, a completer
// that takes up any order at once, every role the rig has services for.
func (r *rig) args(extra ...string) []string {
	roleList := "api,completer"
	if r.queue != "" {
		roleList += ",relay,consumer"
	}
	args := []string{"-addr", "127.0.0.1:0", "-postgres", r.dsn, "-schema", r.schema,
		"-provider", r.providers.provider.URL, "-carrier", r.providers.carrier.URL, "-token", testToken,
		"-secret", "orders-test-secret-0123456789", "-roles", roleList,
		"-lease", "900ms", "-store-timeout", "300ms", "-claim-lease", "300ms",
		"-complete-every", "50ms", "-complete-after", "0s", "-relay-every", "50ms"}
	if r.queue != "" {
		args = append(args, "-amqp", r.amqpURL, "-queue", r.queue)
	}
	return append(args, extra...)
}

// serve runs the service in this process until the test (or stop) ends
// and returns its base URL.
func (r *rig) serve(extra ...string) (base string, out *syncBuffer, stop func()) {
	r.t.Helper()
	cfg, err := parseFlags(r.args(extra...), func(string) string { return "" }, os.Stderr)
	require.NoError(r.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	out = &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, out) }()
	stop = sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(r.t, err, out.String())
		case <-time.After(15 * time.Second):
			r.t.Error("the service did not stop")
		}
	})
	r.t.Cleanup(stop)
	return waitListening(r.t, out), out, stop
}

var listening = regexp.MustCompile(`listening on (\S+)`)

// waitListening waits for the service's "listening on" line.
func waitListening(t *testing.T, out *syncBuffer) string {
	t.Helper()
	var addr string
	waitFor(t, func() string { return "the API to listen" }, func() bool {
		m := listening.FindStringSubmatch(out.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil
	})
	return "http://" + addr
}

// post is one POST /orders as the tenant's client sends it.
func post(base, tenant, key, body string) (int, map[string]string, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/orders", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tenant)
	req.Header.Set("Idempotency-Key", key)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var doc map[string]string
	_ = json.NewDecoder(resp.Body).Decode(&doc)
	return resp.StatusCode, doc, nil
}

// postUntilAnswered sends the order until it is answered with other than
// 409 (the key held by a request that died, until its lease ends) or a
// 5xx (the store slow to answer under load), as a client retries.
func postUntilAnswered(t *testing.T, base, tenant, key, body string) (int, map[string]string) {
	t.Helper()
	var status int
	var doc map[string]string
	var err error
	waitFor(t, func() string {
		return fmt.Sprintf("an answer other than 409 or 5xx (last: %d %v, error %v)", status, doc, err)
	}, func() bool {
		status, doc, err = post(base, tenant, key, body)
		return err == nil && status != http.StatusConflict && status < 500
	})
	return status, doc
}

// orderState is the order's state and problem.
func (r *rig) orderState(id string) (string, string) {
	var state, problem string
	err := r.db.QueryRow(context.Background(), `SELECT state, problem FROM `+newTables(r.schema).orders+` WHERE id = $1`, id).Scan(&state, &problem)
	require.NoError(r.t, err)
	return state, problem
}

// rows counts the rows of table for the order.
func (r *rig) rows(table, orderID string) int {
	var n int
	err := r.db.QueryRow(context.Background(), `SELECT count(*) FROM `+table+` WHERE order_id = $1`, orderID).Scan(&n)
	require.NoError(r.t, err)
	return n
}

// waitSettled waits until the order is in a final state and, with a
// broker, its receipt is sent; it returns the state.
func (r *rig) waitSettled(id string) string {
	r.t.Helper()
	tb := newTables(r.schema)
	var state, problem string
	waitFor(r.t, func() string {
		return fmt.Sprintf("order %s to settle (last: state %q, problem %q, receipts %d)", id, state, problem, r.rows(tb.receipts, id))
	}, func() bool {
		state, problem = r.orderState(id)
		final := state == stateCompleted || state == stateCompensated || state == stateFailed || state == stateNeedsOperator
		return final && (r.queue == "" || r.rows(tb.receipts, id) == 1)
	})
	return state
}

// waitBound bounds every wait of these tests. It is generous: the crash
// tests run their rounds in parallel under the race detector beside the
// rest of the module's tests on a two-core machine.
const waitBound = 90 * time.Second

// waitFor polls cond until it holds, failing the test after waitBound
// with what it waited for and the last thing it saw.
func waitFor(t *testing.T, what func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitBound, what())
		}
		time.Sleep(20 * time.Millisecond)
	}
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

// lastLines is the last n lines of s, for a failure message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
