package testserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// adminFaultsPath is where faults are read and armed over HTTP.
const adminFaultsPath = "/admin/faults"

// maxAdminBody bounds the admin request body; a fault document is tiny.
const maxAdminBody = 16 << 10

// maxFaultCount bounds the one-shot fault counts accepted over HTTP.
const maxFaultCount = 1_000_000

// adminAPI serves /admin/faults: GET reads the armed faults, POST arms
// the ones named in the body (the others are left as they are), DELETE
// disarms all. Every call needs the admin bearer token. crash is what the
// crash_after_commit fault calls; nil means that fault cannot be armed.
type adminAPI struct {
	faults    *Faults
	tokenHash [sha256.Size]byte
	crash     func()
	logger    *slog.Logger
	// guesses rate-limits wrong tokens per remote address, so the token
	// cannot be found by trying.
	guesses *failLimiter
}

func newAdminAPI(faults *Faults, token string, crash func(), logger *slog.Logger) *adminAPI {
	return &adminAPI{faults: faults, tokenHash: sha256.Sum256([]byte(token)), crash: crash, logger: logger,
		guesses: newFailLimiter(time.Now)}
}

// handleAdmin registers /admin/faults on mux.
func (s *Server) handleAdmin(mux *http.ServeMux, cfg config) {
	admin := newAdminAPI(s.faults, cfg.adminToken, cfg.crash, cfg.logger)
	handleMethods(mux, adminFaultsPath, map[string]http.Handler{
		http.MethodGet:    http.HandlerFunc(admin.get),
		http.MethodPost:   http.HandlerFunc(admin.post),
		http.MethodDelete: http.HandlerFunc(admin.clear),
	})
}

// adminRoutes is the handler of AdminHandler: /admin/faults and a 404
// problem elsewhere. It shares the faults, and its own guess limiter.
func (s *Server) adminRoutes(cfg config) http.Handler {
	mux := http.NewServeMux()
	s.handleAdmin(mux, cfg)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteProblem(w, http.StatusNotFound, ProblemNotFound, "Not found", "no resource at this path", 0)
	})
	return mux
}

// faultDocument is the JSON form of FaultState, durations as Go duration
// strings ("500ms").
type faultDocument struct {
	FailNext     failNextDocument `json:"fail_next"`
	LoseNext     int              `json:"lose_next"`
	ResetNext    int              `json:"reset_next"`
	HandlerDelay string           `json:"handler_delay"`
	// CrashAfterCommit is how many requests are still to be followed by
	// the crash hook.
	CrashAfterCommit int `json:"crash_after_commit"`
}

type failNextDocument struct {
	Count      int    `json:"count"`
	Status     int    `json:"status"`
	RetryAfter string `json:"retry_after"`
}

func newFaultDocument(s FaultState) faultDocument {
	return faultDocument{
		FailNext: failNextDocument{
			Count:      s.FailNext.Count,
			Status:     s.FailNext.Status,
			RetryAfter: s.FailNext.RetryAfter.String(),
		},
		LoseNext:     s.LoseNext,
		ResetNext:    s.ResetNext,
		HandlerDelay: s.HandlerDelay.String(),

		CrashAfterCommit: s.CrashAfterCommit,
	}
}

// authorized compares the bearer token with the admin token in constant
// time; comparing hashes keeps the token's length secret too. An address
// that has spent its failures is answered 429 before the token is looked
// at, so a right guess then is not confirmed either.
func (a *adminAPI) authorized(w http.ResponseWriter, r *http.Request) bool {
	host := remoteHost(r)
	if wait, blocked := a.guesses.blocked(host); blocked {
		WriteProblem(w, http.StatusTooManyRequests, ProblemTooManyRequests, "Too many requests",
			"too many wrong admin tokens from this address; retry later", max(wait, time.Second))
		return false
	}
	values := r.Header.Values("Authorization")
	if len(values) == 1 {
		scheme, token, ok := strings.Cut(strings.TrimSpace(values[0]), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
			if subtle.ConstantTimeCompare(sum[:], a.tokenHash[:]) == 1 {
				return true
			}
		}
	}
	a.guesses.fail(host)
	a.logger.Warn("admin token refused", "remote", host)
	w.Header().Set("WWW-Authenticate", "Bearer")
	WriteProblem(w, http.StatusUnauthorized, ProblemUnauthorized, "Unauthorized",
		"the admin endpoint needs Authorization: Bearer <admin token>", 0)
	return false
}

func (a *adminAPI) get(w http.ResponseWriter, r *http.Request) {
	if a.authorized(w, r) {
		a.writeState(w)
	}
}

func (a *adminAPI) clear(w http.ResponseWriter, r *http.Request) {
	if !a.authorized(w, r) {
		return
	}
	a.faults.Clear()
	a.logger.Info("faults cleared")
	a.writeState(w)
}

// post arms the faults the body names. The whole body is validated before
// anything changes.
func (a *adminAPI) post(w http.ResponseWriter, r *http.Request) {
	if !a.authorized(w, r) {
		return
	}
	apply, rerr := parseFaultRequest(w, r, a.crash)
	if rerr != nil {
		writeRequestError(w, rerr)
		return
	}
	for _, arm := range apply {
		arm(a.faults)
	}
	a.logger.Info("faults armed", "faults", newFaultDocument(a.faults.Snapshot()))
	a.writeState(w)
}

func (a *adminAPI) writeState(w http.ResponseWriter) {
	resp, err := jsonResponse(http.StatusOK, newFaultDocument(a.faults.Snapshot()))
	if err != nil {
		WriteProblem(w, http.StatusInternalServerError, ProblemInternal, "Internal error", "", 0)
		return
	}
	writeResponse(w, resp)
}

// parseFaultRequest reads a fault document such as
// {"fail_next":{"count":3,"status":503,"retry_after":"2s"},"lose_next":1,
// "reset_next":0,"handler_delay":"500ms","crash_after_commit":1} and
// returns one setter per member present. crash_after_commit arms crash;
// with a nil crash only 0 (disarm) is accepted, since arming it would
// silently turn the crash into a lost response.
func parseFaultRequest(w http.ResponseWriter, r *http.Request, crash func()) ([]func(*Faults), *requestError) {
	if rerr := requireJSONContentType(r); rerr != nil {
		return nil, rerr
	}
	body, rerr := readBody(w, r, maxAdminBody)
	if rerr != nil {
		return nil, rerr
	}
	fields, rerr := decodeObject(body, "fail_next", "lose_next", "reset_next", "handler_delay", "crash_after_commit")
	if rerr != nil {
		return nil, rerr
	}
	var apply []func(*Faults)
	if raw, ok := fields["fail_next"]; ok {
		count, status, retryAfter, rerr := parseFailNext(raw)
		if rerr != nil {
			return nil, rerr
		}
		apply = append(apply, func(f *Faults) { f.FailNext(count, status, retryAfter) })
	}
	if raw, ok := fields["lose_next"]; ok {
		n, rerr := decodeInt("lose_next", raw, 0, maxFaultCount)
		if rerr != nil {
			return nil, rerr
		}
		apply = append(apply, func(f *Faults) { f.LoseNextResponses(int(n)) })
	}
	if raw, ok := fields["reset_next"]; ok {
		n, rerr := decodeInt("reset_next", raw, 0, maxFaultCount)
		if rerr != nil {
			return nil, rerr
		}
		apply = append(apply, func(f *Faults) { f.ResetNext(int(n)) })
	}
	if raw, ok := fields["handler_delay"]; ok {
		d, rerr := decodeDuration("handler_delay", raw)
		if rerr != nil {
			return nil, rerr
		}
		apply = append(apply, func(f *Faults) { f.SetHandlerDelay(d) })
	}
	if raw, ok := fields["crash_after_commit"]; ok {
		n, rerr := decodeInt("crash_after_commit", raw, 0, maxFaultCount)
		if rerr != nil {
			return nil, rerr
		}
		if n > 0 && crash == nil {
			return nil, invalidRequest("crash_after_commit cannot be armed: this server has no crash hook " +
				"(idem serve has one; a server built with testserver.New needs WithCrashHook)")
		}
		apply = append(apply, func(f *Faults) { f.CrashAfterCommit(int(n), crash) })
	}
	return apply, nil
}

// parseFailNext reads {"count":N,"status":S,"retry_after":"2s"}; status
// defaults to DefaultFailStatus and retry_after to none.
func parseFailNext(raw json.RawMessage) (int, int, time.Duration, *requestError) {
	if len(raw) == 0 || raw[0] != '{' {
		return 0, 0, 0, invalidRequest("fail_next must be an object such as {\"count\":1,\"status\":503}, got %s", describeJSON(raw))
	}
	fields, rerr := decodeObject(raw, "count", "status", "retry_after")
	if rerr != nil {
		rerr.detail = "fail_next: " + rerr.detail
		return 0, 0, 0, rerr
	}
	rawCount, ok := fields["count"]
	if !ok {
		return 0, 0, 0, invalidRequest("fail_next.count is required")
	}
	count, rerr := decodeInt("fail_next.count", rawCount, 0, maxFaultCount)
	if rerr != nil {
		return 0, 0, 0, rerr
	}
	status := int64(DefaultFailStatus)
	if rawStatus, ok := fields["status"]; ok {
		if status, rerr = decodeInt("fail_next.status", rawStatus, 400, 599); rerr != nil {
			return 0, 0, 0, rerr
		}
	}
	var retryAfter time.Duration
	if rawRetry, ok := fields["retry_after"]; ok {
		if retryAfter, rerr = decodeDuration("fail_next.retry_after", rawRetry); rerr != nil {
			return 0, 0, 0, rerr
		}
	}
	return int(count), int(status), retryAfter, nil
}
