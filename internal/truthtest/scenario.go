package truthtest

import (
	"fmt"
	"strings"
	"time"
)

// MoveKind is what the server does with one POST attempt.
type MoveKind int

const (
	// Honest: the idempotency layer works as draft-07 says: a new key is
	// executed (the handler answers Status), a completed key is replayed,
	// a key still executing is answered 409.
	Honest MoveKind = iota
	// LostBefore: the attempt is lost before the idempotency layer sees
	// it (Fault), nothing executed.
	LostBefore
	// LostAfter: the attempt goes through the layer as Honest, then its
	// answer is lost (Fault).
	LostAfter
	// Gateway: something in front of the server (a gateway, a proxy, an
	// authorisation layer) answers Status without reaching the layer.
	Gateway
)

// Fault is how an answer is lost.
type Fault int

const (
	// FaultReset resets the connection (RST).
	FaultReset Fault = iota
	// FaultClose closes it without a word.
	FaultClose
	// FaultDelay holds the answer past the client's attempt timeout,
	// then closes.
	FaultDelay
	// FaultProxy5xx replaces the answer with a proxy's 5xx page (500,
	// 502, 503 or 504 by FaultStatus).
	FaultProxy5xx
	// FaultInterim writes an interim 1xx answer, then closes.
	FaultInterim
)

// LocationKind is where a Location header points.
type LocationKind int

const (
	// LocNone: no Location header.
	LocNone LocationKind = iota
	// LocRelative: "/ops/<id>" (for a 202), or the same path (a 3xx).
	LocRelative
	// LocAbsolute: the same, absolute, on the server's own origin.
	LocAbsolute
	// LocOtherOrigin: another origin (a second server that reports any
	// secret it receives).
	LocOtherOrigin
	// LocGarbage: not a URL anyone can use.
	LocGarbage
)

// Move is the server's script for one POST attempt.
type Move struct {
	Kind   MoveKind
	Status int // the handler's answer (Honest, LostAfter) or the gateway's
	Body   int // index into bodies
	Header int // index into headerSets
	// RetryAfter is an index into retryAfterForms, -1 for none.
	RetryAfter int
	Location   LocationKind
	Fault      Fault
	// FaultStatus picks the proxy's 5xx (FaultProxy5xx) or the interim
	// status (FaultInterim).
	FaultStatus int
	// Truth is the effect of an execution whose answer does not tell
	// (a 202's operation, a 301/302, a stored 5xx).
	Truth bool
	// Store keeps a handler's 4xx or 5xx answer for replay (Stripe stores
	// 5xx); otherwise the key is released.
	Store bool
}

// PollKind is what the server does with one poll of an operation.
type PollKind int

const (
	// PollDoc: a 2xx document whose status is Word (or a pending word
	// when Word would contradict the ledger).
	PollDoc PollKind = iota
	// PollStill: 202, still running.
	PollStill
	// PollStatus: any other answer, Status with Body.
	PollStatus
	// PollLost: the poll's answer is lost (Fault).
	PollLost
)

// Poll is the server's script for one poll.
type Poll struct {
	Kind       PollKind
	Status     int
	Word       string
	Body       int
	RetryAfter int
	Fault      Fault
}

// StepKind is one thing the program (or its operator) does.
type StepKind int

const (
	// StepNew begins a new intent and calls Do.
	StepNew StepKind = iota
	// StepRerun begins intent I again (same name, same payload, the
	// current credentials) and calls Do, as a program resuming its work
	// does; skipped when the program saw I settled.
	StepRerun
	// StepRestart closes the Client and opens a new one on the same
	// keystore file.
	StepRestart
	// StepRefresh gives the account a new credential (a renewed token).
	StepRefresh
	// StepSettle: an operator who looked at the provider's records
	// settles intent I by hand (Client.Settle).
	StepSettle
	// StepReconcile runs Client.Reconcile on intent I (a Reconciler that
	// asks the provider).
	StepReconcile
	// StepPurge purges the keystore as `idem intents purge` does.
	StepPurge
	// StepWait lets Wait pass.
	StepWait
)

// Step is one step of a scenario.
type Step struct {
	Kind StepKind
	I    int
	Wait time.Duration
}

// Scenario is one generated run: a client configuration, the server's
// script and the program's steps.
type Scenario struct {
	Dialect     string
	Bolt        bool
	Retention   time.Duration // 0: the client's default; else short, and the server forgets keys after it
	Grace       time.Duration
	MaxAttempts int
	SecretQuery bool
	Principal   bool // WithPrincipal naming the account, so refreshed tokens are one principal
	Reconciler  bool
	// Stall makes every keystore write wait this long first.
	Stall time.Duration
	// Deadline bounds each call (its context); 0 for a generous bound.
	Deadline time.Duration
	Moves    []Move
	Polls    []Poll
	Steps    []Step
}

// Limits of a generated scenario, small so that one runs in milliseconds.
const (
	maxMoves = 24
	maxPolls = 16
	maxSteps = 10
)

// Generate draws a scenario from s.
func Generate(s Source) Scenario {
	sc := Scenario{
		Dialect:     pick(s, dialectNames...),
		Bolt:        !chance(s, 1, 4),
		MaxAttempts: 1 + s.Intn(5),
		SecretQuery: chance(s, 1, 3),
		Principal:   chance(s, 1, 3),
		Reconciler:  chance(s, 1, 4),
	}
	if chance(s, 1, 5) {
		// 20–99 ms: below the attempt timeout (40 ms) no attempt may be sent;
		// from 40 ms the first is, and a retry must not outlive the retention.
		sc.Retention = time.Duration(20+s.Intn(80)) * time.Millisecond
	}
	if chance(s, 1, 2) {
		sc.Grace = time.Duration(s.Intn(10)) * time.Millisecond
	}
	if chance(s, 1, 10) {
		sc.Stall = time.Duration(1+s.Intn(10)) * time.Millisecond
	}
	if chance(s, 1, 8) {
		sc.Deadline = time.Duration(5+s.Intn(80)) * time.Millisecond
	}
	for n := s.Intn(maxMoves + 1); n > 0; n-- {
		sc.Moves = append(sc.Moves, drawMove(s))
	}
	for n := s.Intn(maxPolls + 1); n > 0; n-- {
		sc.Polls = append(sc.Polls, drawPoll(s))
	}
	if sc.Retention > 0 {
		// Slow answers carry retries past a short retention.
		for i := range sc.Moves {
			if sc.Moves[i].Kind != Honest && sc.Moves[i].Kind != Gateway && chance(s, 1, 2) {
				sc.Moves[i].Fault = FaultDelay
			}
		}
	}
	intents := 1
	sc.Steps = append(sc.Steps, Step{Kind: StepNew})
	for n := s.Intn(maxSteps); n > 0 && len(sc.Steps) < 2*maxSteps; n-- {
		steps := drawSteps(s, intents, sc)
		for _, st := range steps {
			if st.Kind == StepNew {
				intents++
			}
		}
		sc.Steps = append(sc.Steps, steps...)
	}
	return sc
}

func drawMove(s Source) Move {
	m := Move{
		Kind:        MoveKind(pick(s, 0, 0, 0, 1, 2, 2, 3, 3)),
		Status:      drawStatus(s),
		Body:        s.Intn(len(bodies)),
		Header:      pick(s, 0, 0, 0, 1, 2, 3, 4),
		RetryAfter:  drawRetryAfter(s),
		Location:    LocationKind(pick(s, 1, 1, 1, 2, 0, 3, 4)),
		Fault:       Fault(s.Intn(5)),
		FaultStatus: s.Intn(4),
		Truth:       chance(s, 1, 2),
		Store:       chance(s, 1, 2),
	}
	if m.Fault == FaultDelay && !chance(s, 1, 4) {
		m.Fault = FaultReset // delays cost wall time: fewer of them
	}
	return m
}

func drawPoll(s Source) Poll {
	p := Poll{
		Kind:       PollKind(pick(s, 0, 0, 0, 1, 2, 2, 3)),
		Status:     drawStatus(s),
		Word:       pick(s, statusWords...),
		Body:       s.Intn(len(bodies)),
		RetryAfter: drawRetryAfter(s),
		Fault:      Fault(pick(s, 0, 1)),
	}
	if p.Kind == PollStatus && chance(s, 1, 2) {
		p.Status = pick(s, 400, 401, 403, 404, 405, 406, 409, 410, 410, 404, 422, 429, 500, 502, 503)
	}
	if p.Kind == PollDoc && chance(s, 1, 4) {
		p.Status = pick(s, 201, 203, 206, 299)
	} else if p.Kind == PollDoc {
		p.Status = 200
	}
	return p
}

// drawSteps draws what the program does next: one step, or a short
// sequence that makes a case (a refresh, then a re-run with the new
// credentials; an intent left to expire, purged, and run again).
func drawSteps(s Source, intents int, sc Scenario) []Step {
	i := s.Intn(intents)
	choices := []int{0, 0, 1, 1, 1, 2, 3, 4, 5, 6}
	if sc.Bolt {
		choices = append(choices, 7, 7, 8)
	}
	if sc.Retention > 0 {
		choices = append(choices, 9, 10)
		if sc.Bolt {
			choices = append(choices, 11, 11)
		}
	}
	past := sc.Retention + 5*time.Millisecond
	switch pick(s, choices...) {
	case 0:
		return []Step{{Kind: StepNew}}
	case 1:
		return []Step{{Kind: StepRerun, I: i}}
	case 2:
		return []Step{{Kind: StepRefresh}, {Kind: StepRerun, I: i}}
	case 3:
		return []Step{{Kind: StepSettle, I: i}}
	case 4:
		return []Step{{Kind: StepReconcile, I: i}}
	case 5:
		return []Step{{Kind: StepWait, Wait: time.Duration(1+s.Intn(60)) * time.Millisecond}}
	case 6:
		return []Step{{Kind: StepRefresh}}
	case 7:
		return []Step{{Kind: StepRestart}, {Kind: StepRerun, I: i}}
	case 8:
		return []Step{{Kind: StepPurge}, {Kind: StepRerun, I: i}}
	case 9:
		return []Step{{Kind: StepWait, Wait: past}, {Kind: StepRerun, I: i}}
	case 10:
		// Just inside the retention.
		return []Step{{Kind: StepWait, Wait: sc.Retention * 3 / 4}, {Kind: StepRerun, I: i}}
	}
	return []Step{{Kind: StepWait, Wait: past}, {Kind: StepRerun, I: i}, {Kind: StepPurge}, {Kind: StepRerun, I: i}}
}

// String gives the scenario in a form to read, and to paste into a
// regression test.
func (sc Scenario) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Scenario{Dialect: %q, Bolt: %v, Retention: %d, Grace: %d, MaxAttempts: %d, SecretQuery: %v, Principal: %v, Reconciler: %v, Stall: %d, Deadline: %d,\n",
		sc.Dialect, sc.Bolt, sc.Retention, sc.Grace, sc.MaxAttempts, sc.SecretQuery, sc.Principal, sc.Reconciler, sc.Stall, sc.Deadline)
	b.WriteString("  Moves: []Move{\n")
	for _, m := range sc.Moves {
		fmt.Fprintf(&b, "    {Kind: %s, Status: %d, Body: %d, Header: %d, RetryAfter: %d, Location: %d, Fault: %d, FaultStatus: %d, Truth: %v, Store: %v},\n",
			[]string{"Honest", "LostBefore", "LostAfter", "Gateway"}[m.Kind], m.Status, m.Body, m.Header, m.RetryAfter, m.Location, m.Fault, m.FaultStatus, m.Truth, m.Store)
	}
	b.WriteString("  },\n  Polls: []Poll{\n")
	for _, p := range sc.Polls {
		fmt.Fprintf(&b, "    {Kind: %s, Status: %d, Word: %q, Body: %d, RetryAfter: %d, Fault: %d},\n",
			[]string{"PollDoc", "PollStill", "PollStatus", "PollLost"}[p.Kind], p.Status, p.Word, p.Body, p.RetryAfter, p.Fault)
	}
	b.WriteString("  },\n  Steps: []Step{\n")
	for _, st := range sc.Steps {
		fmt.Fprintf(&b, "    {Kind: %s, I: %d, Wait: %d},\n",
			[]string{"StepNew", "StepRerun", "StepRestart", "StepRefresh", "StepSettle", "StepReconcile", "StepPurge", "StepWait"}[st.Kind], st.I, st.Wait)
	}
	b.WriteString("  },\n}")
	return b.String()
}
