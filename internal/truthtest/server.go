package truthtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server is the scripted adversarial server: an idempotency layer that
// honours keys as a correct draft-07 server does, in front of which the
// script puts gateways, lost answers and delays, with a Ledger of every
// effect. Other is a second origin that serves the same operations and
// reports every secret it receives.
type Server struct {
	// Ledger holds every effect the server made.
	Ledger *Ledger
	// Main is the server the intents are sent to; Other another origin.
	Main, Other *httptest.Server

	dialect   string
	keyHeader string // "" when the key travels in the body
	retention time.Duration
	hold      time.Duration

	mu       sync.Mutex
	moves    []Move
	polls    []Poll
	keys     map[string]*keyState
	ops      map[string]*operation
	nextID   int
	secrets  []string
	problems []string
	trace    []string
}

// keyState is what the idempotency layer holds for one key in one
// account's scope.
type keyState struct {
	first  time.Time
	stored *answer // nil while unstored (a released key is deleted)
	effect bool    // the execution took effect (or its operation will)
}

type answer struct {
	status int
	header http.Header
	body   string
}

type operation struct {
	truth bool
}

// NewServer starts a server speaking dialect (by its package dialect
// name) that plays moves and polls in order, then answers honestly;
// retention > 0 makes it forget a key that long after its first request;
// hold is how long FaultDelay holds an answer.
func NewServer(dialect string, retention, hold time.Duration, moves []Move, polls []Poll) *Server {
	s := &Server{
		Ledger:    newLedger(),
		dialect:   dialect,
		retention: retention,
		hold:      hold,
		moves:     append([]Move(nil), moves...),
		polls:     append([]Poll(nil), polls...),
		keys:      make(map[string]*keyState),
		ops:       make(map[string]*operation),
	}
	s.keyHeader = dialectNamed(dialect).KeyHeader
	s.Main = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, false) }))
	s.Other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, true) }))
	return s
}

// Close stops both origins, waiting for the answers they hold.
func (s *Server) Close() {
	s.Main.Close()
	s.Other.Close()
}

// WatchSecrets names the values the other origin must never receive.
func (s *Server) WatchSecrets(secrets ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets = append(s.secrets, secrets...)
}

// Problems returns what the server saw that no correct client sends.
func (s *Server) Problems() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.problems...)
}

// Trace returns what the server did, one line a request.
func (s *Server) Trace() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.trace...)
}

// Effects returns the effects made under key in account's scope.
func (s *Server) Effects(account, key string) int {
	return s.Ledger.Key(account + "/" + key)
}

func (s *Server) tracef(format string, args ...any) {
	if len(s.trace) < 400 {
		s.trace = append(s.trace, fmt.Sprintf(format, args...))
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request, other bool) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if other {
		s.checkOtherOrigin(r)
	}
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/ops/"):
		s.poll(w, strings.TrimPrefix(r.URL.Path, "/ops/"))
	case r.Method == http.MethodPost:
		s.post(w, r, raw)
	default:
		http.NotFound(w, r)
	}
}

// checkOtherOrigin notes any watched secret in a request to the other
// origin.
func (s *Server) checkOtherOrigin(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sec := range s.secrets {
		for name, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, sec) {
					s.problems = append(s.problems, fmt.Sprintf("a secret was sent to another origin in header %s (%s %s)", name, r.Method, r.URL.Path))
				}
			}
		}
		if strings.Contains(r.URL.RawQuery, sec) {
			s.problems = append(s.problems, fmt.Sprintf("a secret was sent to another origin in the query (%s %s)", r.Method, r.URL.Path))
		}
	}
}

// account names who the request acts for: the account in its token
// ("tok_<account>_v<n>_<secret>"), in Authorization or X-API-Key.
func account(r *http.Request) string {
	tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if tok == "" {
		tok = r.Header.Get("X-API-Key")
	}
	parts := strings.Split(tok, "_")
	if len(parts) < 4 || parts[0] != "tok" {
		return ""
	}
	return parts[1]
}

func (s *Server) key(r *http.Request, raw []byte) string {
	if s.keyHeader != "" {
		vs := r.Header.Values(s.keyHeader)
		if len(vs) != 1 {
			return ""
		}
		return strings.Trim(vs[0], `"`)
	}
	var doc struct {
		Key string `json:"idempotency_key"`
	}
	_ = json.Unmarshal(raw, &doc)
	return doc.Key
}

func intentOf(raw []byte) string {
	var doc struct {
		Intent string `json:"intent"`
	}
	_ = json.Unmarshal(raw, &doc)
	return doc.Intent
}

func (s *Server) post(w http.ResponseWriter, r *http.Request, raw []byte) {
	acct, intent := account(r), intentOf(raw)
	key := s.key(r, raw)
	s.mu.Lock()
	if acct == "" {
		s.tracef("POST %s without credentials: 401", r.URL.Path)
		s.mu.Unlock()
		writeAnswer(w, answer{status: 401, body: "unauthorized"})
		return
	}
	if key == "" {
		s.problems = append(s.problems, fmt.Sprintf("an attempt for %s reached the server without an idempotency key", intent))
		s.mu.Unlock()
		writeAnswer(w, answer{status: 400, header: http.Header{"Content-Type": {bodies[5].contentType}}, body: bodies[5].text})
		return
	}
	m := Move{Kind: Honest, Status: 201, RetryAfter: -1, Location: LocRelative}
	if len(s.moves) > 0 {
		m, s.moves = s.moves[0], s.moves[1:]
	}
	sk := acct + "/" + key
	st := s.keys[sk]
	if st != nil && s.retention > 0 && time.Since(st.first) > s.retention {
		s.tracef("POST %s: key %s past the retention, forgotten", intent, short(key))
		delete(s.keys, sk)
		st = nil
	}
	keyEffect := st != nil && st.effect
	switch m.Kind {
	case LostBefore:
		s.tracef("POST %s key %s: lost before the layer (fault %d)", intent, short(key), m.Fault)
		s.mu.Unlock()
		s.fault(w, m.Fault, m.FaultStatus)
	case Gateway:
		status := m.Status
		if (status >= 200 && status <= 299) || status == 303 {
			status = 502
		}
		a := s.answerOf(m, status, r)
		a = sanitize(s.dialect, a, false, keyEffect)
		s.tracef("POST %s key %s: gateway %d", intent, short(key), a.status)
		s.mu.Unlock()
		if status < 200 {
			interim(w, status)
			return
		}
		writeAnswer(w, a)
	default:
		a, interimStatus := s.layer(sk, st, m, intent, r)
		lost := m.Kind == LostAfter
		s.mu.Unlock()
		switch {
		case lost:
			s.fault(w, m.Fault, m.FaultStatus)
		case interimStatus != 0:
			interim(w, interimStatus)
		default:
			writeAnswer(w, a)
		}
	}
}

// layer is the idempotency layer, called with s.mu held: a stored key is
// replayed; a new one executed with the handler's answer m.Status.
// interimStatus is set when the handler's answer is a 1xx, which reaches
// the client as an interim answer and a closed connection.
func (s *Server) layer(sk string, st *keyState, m Move, intent string, r *http.Request) (a answer, interimStatus int) {
	if st != nil && st.stored != nil {
		a = st.stored.clone()
		a.header.Set("Idempotent-Replayed", "true")
		s.tracef("POST %s key %s: replay %d (move %d)", intent, short(sk), a.status, m.Kind)
		return a, 0
	}
	status := m.Status
	store := true
	effect := false
	s.nextID++
	id := "pay_" + strconv.Itoa(s.nextID)
	switch {
	case status < 200:
		interimStatus = status
		effect = true
		a = answer{status: 201, header: http.Header{"Content-Type": {"application/json"}}, body: `{"id":"` + id + `","status":"succeeded"}`}
	case status == 202 && m.Location != LocNone:
		effect = m.Truth
		s.ops[id] = &operation{truth: m.Truth}
		a = s.answerOf(m, status, r)
		a.header.Set("Content-Type", "application/json")
		a.body = operationDoc(s.dialect, id, pendingWord(s.dialect))
		a.header.Set("Location", s.location(m.Location, "/ops/"+id, r))
	case status >= 200 && status <= 299, status == 303:
		effect = true
		a = s.answerOf(m, status, r)
		a.header.Set("Content-Type", "application/json")
		a.body = `{"id":"` + id + `","status":"succeeded"}`
		if m.Location != LocNone {
			a.header.Set("Location", s.location(m.Location, "/payments/"+id, r))
		}
	case status == 307 || status == 308:
		// "Repeat the request there": the handler did nothing here.
		a = s.answerOf(m, status, r)
	case status < 400:
		// A 301 or 302 may follow a processed POST, or none.
		effect = m.Truth
		a = s.answerOf(m, status, r)
		if m.Location != LocNone {
			a.header.Set("Location", s.location(m.Location, r.URL.Path, r))
		}
	case status < 500, status == 501, status == 505:
		// A refusal: the handler did nothing (501 and 505 say the server
		// cannot do the request at all).
		store = m.Store
		a = s.answerOf(m, status, r)
	default:
		store = m.Store
		effect = m.Store && m.Truth
		a = s.answerOf(m, status, r)
	}
	a = sanitize(s.dialect, a, effect, effect)
	if effect {
		s.Ledger.record(sk, intent)
	}
	if store {
		stored := a.clone()
		s.keys[sk] = &keyState{first: time.Now(), stored: &stored, effect: effect}
	}
	s.tracef("POST %s key %s: executed, handler %d, effect %v, stored %v, lost %v", intent, short(sk), status, effect, store, m.Kind == LostAfter)
	return a, interimStatus
}

// answerOf builds the non-2xx answer m describes with status.
func (s *Server) answerOf(m Move, status int, r *http.Request) answer {
	b := bodies[m.Body]
	a := answer{status: status, header: http.Header{}, body: b.text}
	if b.contentType != "" {
		a.header.Set("Content-Type", b.contentType)
	}
	for name, vs := range headerSets[m.Header] {
		a.header[name] = append([]string(nil), vs...)
	}
	if m.RetryAfter >= 0 {
		a.header.Set("Retry-After", retryAfterForms[m.RetryAfter](time.Now()))
	}
	if status >= 300 && status < 400 && m.Location != LocNone {
		a.header.Set("Location", s.location(m.Location, r.URL.Path, r))
	}
	return a
}

// location is where a Location of kind k for path points.
func (s *Server) location(k LocationKind, path string, r *http.Request) string {
	switch k {
	case LocAbsolute:
		return s.Main.URL + path
	case LocOtherOrigin:
		return s.Other.URL + strings.SplitN(path, "?", 2)[0]
	case LocGarbage:
		return "http://[::1" + path
	}
	return path
}

// sanitize keeps an answer from lying in a way no client can defend
// against: one that says this attempt was not executed (or that its key
// belongs to another payload) when it took effect, or that the key was
// refused when it took effect. Under Stripe a 4xx marked
// Idempotent-Replayed is the saved final answer of the key's first
// execution ("Stripe's idempotency works by saving the resulting status
// code and body of the first request"), which Stripe never gives a key
// that took effect.
func sanitize(dialect string, a answer, attemptEffect, keyEffect bool) answer {
	if dialect == "stripe" && (attemptEffect || keyEffect) && a.status >= 400 && a.status < 500 {
		a.header.Del("Idempotent-Replayed")
	}
	b := body{contentType: a.header.Get("Content-Type"), text: a.body}
	if attemptEffect && (provesNotExecutedNow(a.status, b) || provesKeyReused(b)) {
		switch a.status {
		case 408, 425, 429:
			a.status = 500
		}
		a.body = bodies[2].text
		a.header.Set("Content-Type", bodies[2].contentType)
	}
	if (attemptEffect || keyEffect) && provesKeyRefused(a.status, b) {
		a.body = bodies[1].text
		a.header.Set("Content-Type", bodies[1].contentType)
	}
	return a
}

func (s *Server) poll(w http.ResponseWriter, id string) {
	s.mu.Lock()
	op := s.ops[id]
	if op == nil {
		s.tracef("GET op %s: unknown, 404", id)
		s.mu.Unlock()
		writeAnswer(w, answer{status: 404, body: "no such operation"})
		return
	}
	p := Poll{Kind: PollDoc, Status: 200, Word: finalWord(s.dialect, op.truth), RetryAfter: -1}
	if len(s.polls) > 0 {
		p, s.polls = s.polls[0], s.polls[1:]
	}
	a := answer{status: p.Status, header: http.Header{}}
	if p.RetryAfter >= 0 {
		a.header.Set("Retry-After", retryAfterForms[p.RetryAfter](time.Now()))
	}
	still := func() {
		a.status = 202
		a.header.Set("Content-Type", "application/json")
		a.header.Set("Location", "/ops/"+id)
		a.body = operationDoc(s.dialect, id, pendingWord(s.dialect))
	}
	switch p.Kind {
	case PollDoc:
		word := p.Word
		if t := wordTruth(s.dialect, word); (t > 0 && !op.truth) || (t < 0 && op.truth) {
			word = pendingWord(s.dialect)
		}
		a.header.Set("Content-Type", "application/json")
		a.body = operationDoc(s.dialect, id, word)
	case PollStill:
		still()
	case PollStatus:
		b := bodies[p.Body]
		a.body = b.text
		if b.contentType != "" {
			a.header.Set("Content-Type", b.contentType)
		}
		// A 2xx whose body names no status reads as the finished
		// resource: only when the operation took effect.
		if p.Status >= 200 && p.Status <= 299 && !op.truth {
			still()
		}
	}
	s.tracef("GET op %s (truth %v): kind %d status %d body %.60s", id, op.truth, p.Kind, a.status, a.body)
	s.mu.Unlock()
	switch {
	case p.Kind == PollLost:
		s.fault(w, p.Fault, 0)
	case a.status < 200:
		interim(w, a.status)
	default:
		writeAnswer(w, a)
	}
}

func (a answer) clone() answer {
	return answer{status: a.status, header: a.header.Clone(), body: a.body}
}

func writeAnswer(w http.ResponseWriter, a answer) {
	for name, vs := range a.header {
		w.Header()[name] = vs
	}
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

// fault loses an answer.
func (s *Server) fault(w http.ResponseWriter, f Fault, fs int) {
	switch f {
	case FaultProxy5xx:
		writeAnswer(w, answer{status: []int{500, 502, 503, 504}[fs%4], header: http.Header{"Content-Type": {bodies[2].contentType}}, body: bodies[2].text})
		return
	case FaultInterim:
		interim(w, []int{100, 102, 103, 199}[fs%4])
		return
	case FaultDelay:
		time.Sleep(s.hold)
	}
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok && f == FaultReset {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// interim writes a 1xx answer, then closes the connection.
func interim(w http.ResponseWriter, status int) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	fmt.Fprintf(buf, "HTTP/1.1 %d Interim\r\n\r\n", status)
	_ = buf.Flush()
	_ = conn.Close()
}

func short(k string) string {
	if i := strings.LastIndexByte(k, '/'); i >= 0 {
		k = k[i+1:]
	}
	if len(k) > 8 {
		return k[:8]
	}
	return k
}
