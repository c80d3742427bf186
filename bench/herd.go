package bench

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// HerdConfig describes one retry storm: Clients start at the same instant
// against a server that serves Slots requests at a time, each for Service,
// and sheds every request that finds no free slot with a 503. Every client
// retries until it has one success.
type HerdConfig struct {
	// Clients is how many clients start at once (N).
	Clients int
	// Slots is how many requests the server serves at a time (K).
	Slots int
	// Service is how long a served request holds its slot; the client's
	// call completes when it ends.
	Service time.Duration
	// RejectRTT is the round trip of a shed request: the client learns of
	// the 503 this long after it sent the attempt.
	RejectRTT time.Duration
	// RetryAfter, when positive, is sent with every 503 as a
	// delta-seconds Retry-After (rounded up to whole seconds, as the
	// header allows nothing finer).
	RetryAfter time.Duration
	// Seed makes the run reproducible: client i draws its randomness from
	// a PCG seeded with (Seed, i).
	Seed uint64
	// MaxAttemptsPerClient bounds a run whose strategy never gets through;
	// reaching it is an error. Zero means 100000.
	MaxAttemptsPerClient int
}

// DefaultHerd is the storm of BENCHMARKS.md: 200 clients, 10 slots of 50 ms
// (so at best 200 successes a second and a 1 s makespan), 1 ms to learn of
// a rejection.
func DefaultHerd() HerdConfig {
	return HerdConfig{Clients: 200, Slots: 10, Service: 50 * time.Millisecond, RejectRTT: time.Millisecond, Seed: 1}
}

// HerdResult is what one strategy made of one storm.
type HerdResult struct {
	Strategy string
	// Attempts counts every request the server received, served or shed.
	Attempts int
	// Makespan is when the last client completed.
	Makespan time.Duration
	// P50 and P99 are percentiles of the clients' completion times.
	P50, P99 time.Duration
}

// herdEpoch is the virtual clock's zero: any fixed instant works, it only
// anchors the time.Time a Retry-After parser may read.
var herdEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// RunHerd plays the storm with strategy s on a virtual clock. The run is
// deterministic for a given config, except for strategies that draw from
// their own time-seeded source (go-retryablehttp's LinearJitterBackoff).
func RunHerd(cfg HerdConfig, s Strategy) (HerdResult, error) {
	if err := cfg.validate(); err != nil {
		return HerdResult{}, err
	}
	maxAttempts := cfg.MaxAttemptsPerClient
	if maxAttempts <= 0 {
		maxAttempts = 100000
	}
	rejection := rejectionResponse(cfg.RetryAfter)

	waiters := make([]Waiter, cfg.Clients)
	retries := make([]int, cfg.Clients)
	arrivals := &eventQueue{}
	for i := range cfg.Clients {
		rnd := rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
		waiters[i] = s.NewClient(rnd.Float64)
		arrivals.push(0, i)
	}
	busy := &durationHeap{} // when each occupied slot frees up
	completions := make([]time.Duration, 0, cfg.Clients)
	res := HerdResult{Strategy: s.Name}

	for arrivals.Len() > 0 {
		ev := arrivals.pop()
		res.Attempts++
		for busy.Len() > 0 && (*busy)[0] <= ev.at {
			heap.Pop(busy)
		}
		if busy.Len() < cfg.Slots {
			done := ev.at + cfg.Service
			heap.Push(busy, done)
			completions = append(completions, done)
			continue
		}
		if retries[ev.client] >= maxAttempts-1 {
			return res, fmt.Errorf("bench: herd: strategy %s: a client made %d attempts without success", s.Name, maxAttempts)
		}
		learned := ev.at + cfg.RejectRTT
		wait := max(waiters[ev.client](retries[ev.client], rejection, herdEpoch.Add(learned)), 0)
		retries[ev.client]++
		arrivals.push(learned+wait, ev.client)
	}
	res.P50 = Percentile(completions, 50)
	res.P99 = Percentile(completions, 99)
	res.Makespan = Percentile(completions, 100)
	return res, nil
}

func (c HerdConfig) validate() error {
	var errs []error
	if c.Clients < 1 {
		errs = append(errs, fmt.Errorf("clients %d: need at least 1", c.Clients))
	}
	if c.Slots < 1 {
		errs = append(errs, fmt.Errorf("slots %d: need at least 1", c.Slots))
	}
	if c.Service <= 0 {
		errs = append(errs, fmt.Errorf("service %s: need a positive duration", c.Service))
	}
	if c.RejectRTT < 0 || c.RetryAfter < 0 {
		errs = append(errs, errors.New("reject RTT and Retry-After must not be negative"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bench: herd config: %w", err)
	}
	return nil
}

// rejectionResponse is the 503 every shed request gets. Strategies only
// read it, so one value serves the whole run.
func rejectionResponse(retryAfter time.Duration) *http.Response {
	h := http.Header{}
	if retryAfter > 0 {
		secs := (retryAfter + time.Second - 1) / time.Second
		h.Set("Retry-After", strconv.FormatInt(int64(secs), 10))
	}
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Status: "503 Service Unavailable", Header: h, Body: http.NoBody}
}

// event is one attempt arriving at the server.
type event struct {
	at     time.Duration
	seq    int // breaks ties in arrival order, for determinism
	client int
}

// eventQueue orders attempts by arrival time, then by when they were
// scheduled.
type eventQueue struct {
	items []event
	next  int
}

func (q *eventQueue) push(at time.Duration, client int) {
	heap.Push(q, event{at: at, seq: q.next, client: client})
	q.next++
}

func (q *eventQueue) pop() event { return heap.Pop(q).(event) }

func (q *eventQueue) Len() int { return len(q.items) }
func (q *eventQueue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}
func (q *eventQueue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *eventQueue) Push(x any)    { q.items = append(q.items, x.(event)) }
func (q *eventQueue) Pop() any {
	last := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return last
}

// durationHeap is a min-heap of instants.
type durationHeap []time.Duration

func (h durationHeap) Len() int           { return len(h) }
func (h durationHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h durationHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *durationHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *durationHeap) Pop() any {
	old := *h
	last := old[len(old)-1]
	*h = old[:len(old)-1]
	return last
}
