// Package keystore is where idem's intents live between attempts and across
// restarts: one Record per intent, keyed by its idempotency key, written
// durably before the first byte of the request leaves.
//
// Implementations: Bolt (OpenBolt; the default for a process that must
// survive a restart, embedded, durable on return), Memory (NewMemory;
// tests and processes that need no persistence) and, in its own package
// so that programs without it do not carry its driver, Postgres
// (github.com/idemkit/idem/keystore/pgkeystore; one keystore shared by a
// fleet of workers, which claim pending intents through Claimer so no two
// resend one intent at once). Open picks one by location; a package of
// another keystore registers its URL scheme with RegisterOpener. All three
// also keep the decision records of package saga's runs beside the
// intents (RunKeeper).
//
// Durability: a write a Store returns from is durable (for stores that
// persist), with one opt-in exception, Deferrer.UpdateDeferred (Bolt),
// for the write that settles an intent with its answer. It is visible at
// once in the process and durable with the store's next commit; a crash
// before that leaves the intent Pending, and its resume gets the server's
// replay under the same key. Create, the write before the first byte is
// sent, is never deferred.
package keystore

import (
	"context"
	"net/http"
	"strings"
	"time"
)

// State is the life stage of an intent.
type State string

const (
	// Pending: created, not yet final. Resumable with the same key.
	Pending State = "pending"
	// Succeeded: a 2xx answer (also a replay) is stored.
	Succeeded State = "succeeded"
	// Accepted: the server answered 202 and the operation was not polled
	// to a final state; the 202 is stored.
	Accepted State = "accepted"
	// Failed: a final non-2xx answer (or a final error) is stored.
	Failed State = "failed"
	// Expired: older than the server's retention while still unresolved;
	// never resent, reported for reconciliation.
	Expired State = "expired"
)

// Final reports whether s will never be sent again.
func (s State) Final() bool { return s != Pending }

// Settled reports whether nothing is left to do for s: it is final and not
// Accepted (an accepted operation is still polled to its outcome).
func (s State) Settled() bool { return s.Final() && s != Accepted }

// Response is a final answer stored with its intent.
type Response struct {
	Status int         `json:"status"`
	Header http.Header `json:"header,omitempty"`
	Body   []byte      `json:"body,omitempty"`
}

// Record is one intent as a Store holds it. Secret headers are never part
// of a Record.
type Record struct {
	Key         string      `json:"key"`
	Name        string      `json:"name,omitempty"`
	Method      string      `json:"method"`
	URL         string      `json:"url"`
	Header      http.Header `json:"header,omitempty"`
	Body        []byte      `json:"body,omitempty"`
	Fingerprint string      `json:"fingerprint"`
	State       State       `json:"state"`
	CreatedAt   time.Time   `json:"created_at"`
	UpdatedAt   time.Time   `json:"updated_at"`
	// Attempts counts attempts over the intent's whole life.
	Attempts int `json:"attempts"`
	// Response is the final (or 202) answer, once there is one.
	Response *Response `json:"response,omitempty"`
	// Operation is the Location of a 202's operation.
	Operation string `json:"operation,omitempty"`
	// LastError describes the last failure, for reports.
	LastError string `json:"last_error,omitempty"`
	// Host overrides the Host header of every attempt (http.Request.Host),
	// "" to send the URL's host.
	Host string `json:"host,omitempty"`
	// AcceptedAt is when a 202 made the intent Accepted; zero before.
	AcceptedAt time.Time `json:"accepted_at,omitzero"`
	// Principal is a keyed fingerprint (hex) of who the intent acts for,
	// "" for anonymous: never the credentials themselves, and not
	// reversible from the keystore alone. A named record's Name is
	// scoped by it (ScopedName).
	Principal string `json:"principal,omitempty"`
	// SecretHeaders names the secret headers (canonical, sorted) the
	// intent was begun with; their values are never stored, and an
	// attempt without them is refused.
	SecretHeaders []string `json:"secret_headers,omitempty"`
	// MayHaveExecuted is set once an attempt may have taken effect on the
	// server without the client holding its final answer (a lost answer,
	// a 5xx, a 409 in progress). From then on only an answer that proves
	// the outcome, or a reconciliation, settles the intent.
	MayHaveExecuted bool `json:"may_have_executed,omitempty"`
	// Reconciliations is the audit trail of verdicts reached without the
	// server's answer (a Reconciler, or a person through `idem intents
	// settle`), oldest first.
	Reconciliations []Reconciliation `json:"reconciliations,omitempty"`
	// Purged is when a purge reduced the record to its tombstone (see
	// Tombstone); zero for a whole record.
	Purged time.Time `json:"purged_at,omitzero"`
}

// principalNameMark separates a business name from its principal in a
// stored name.
const principalNameMark = "@principal:"

// ScopedName is the name a named intent is stored under: its business
// name, scoped by its principal, so two principals may use one business
// name. An anonymous intent's name is the business name itself.
func ScopedName(name, principal string) string {
	if name == "" || principal == "" {
		return name
	}
	return name + principalNameMark + principal
}

// BusinessName is the business name of a stored name (ScopedName's
// inverse).
func BusinessName(stored, principal string) string {
	if principal == "" {
		return stored
	}
	// strings.TrimSuffix(stored, principalNameMark+principal), without
	// building the suffix.
	if name, ok := strings.CutSuffix(stored, principal); ok {
		if name, ok := strings.CutSuffix(name, principalNameMark); ok {
			return name
		}
	}
	return stored
}

// Outcomes a Reconciliation may record.
const (
	ReconciledSucceeded = "succeeded"
	ReconciledFailed    = "failed"
	ReconciledUnknown   = "unknown"
	// ReconciledConflict records an answer of the server that arrived
	// after the intent was settled by a verdict (an attempt in flight
	// when a person settled it by force) and contradicts that verdict.
	// The verdict stays; the answer is evidence for a person to weigh.
	ReconciledConflict = "conflict"
)

// Reconciliation is one verdict on an intent's outcome reached without
// the server's answer to the request itself.
type Reconciliation struct {
	// Outcome is ReconciledSucceeded, ReconciledFailed or
	// ReconciledUnknown (asked, and still not known), or, for an answer
	// of the server that arrived after a verdict, what that answer says
	// (ReconciledConflict when it contradicts the verdict).
	Outcome string `json:"outcome"`
	// Source is "reconciler" (a function given to the client), "manual"
	// (a person), or "server" (the server's answer to an attempt that
	// was in flight when a verdict settled the intent, kept as evidence;
	// never a verdict itself).
	Source string `json:"source"`
	// By names who decided: a user, a program.
	By string `json:"by,omitempty"`
	// At is when the verdict was recorded.
	At time.Time `json:"at"`
	// Note is the evidence or reason given.
	Note string `json:"note,omitempty"`
}

// Clone returns a deep copy, so callers never share maps or slices with a
// store.
func (r *Record) Clone() *Record {
	if r == nil {
		return nil
	}
	c := *r
	c.Header = r.Header.Clone()
	c.Body = append([]byte(nil), r.Body...)
	if r.Body == nil {
		c.Body = nil
	}
	if r.Response != nil {
		resp := *r.Response
		resp.Header = r.Response.Header.Clone()
		if r.Response.Body != nil {
			resp.Body = append([]byte(nil), r.Response.Body...)
		}
		c.Response = &resp
	}
	if r.SecretHeaders != nil {
		c.SecretHeaders = append([]string(nil), r.SecretHeaders...)
	}
	if r.Reconciliations != nil {
		c.Reconciliations = append([]Reconciliation(nil), r.Reconciliations...)
	}
	return &c
}

// Filter selects records for List. Zero fields match everything.
type Filter struct {
	// States, when non-empty, keeps only records in one of these states.
	States []State
	// CreatedBefore, when non-zero, keeps only records created before it.
	CreatedBefore time.Time
}

// Store keeps intents. Every method is safe for concurrent use and every
// write is durable when it returns (for stores that persist at all; see
// Deferrer for the one write a store may offer to defer).
type Store interface {
	// Create stores r unless r.Name is non-empty and a record with that
	// name exists: then it returns the existing record and created=false,
	// writing nothing. A duplicate Key is an error.
	Create(ctx context.Context, r *Record) (existing *Record, created bool, err error)
	// Get returns the record with this key, or ErrNotFound. A stored
	// record that fails its checksum (or does not decode) is ErrCorrupt,
	// never returned changed.
	Get(ctx context.Context, key string) (*Record, error)
	// GetByName returns the record with this name, or ErrNotFound; a
	// damaged one is ErrCorrupt.
	GetByName(ctx context.Context, name string) (*Record, error)
	// Update replaces the stored record with r.Key; ErrNotFound if absent.
	// It never changes a settled record into another state: a Succeeded
	// or Failed record stays in its state (rewriting it in the same state
	// is allowed, e.g. to add a verdict to its audit trail), and an
	// Expired one may only become Succeeded or Failed (a reconciliation).
	// Any other change fails with ErrSettled and writes nothing; the check
	// and the write are one atomic step.
	Update(ctx context.Context, r *Record) error
	// List returns the records matching f, oldest first. Damaged records
	// are left out and named in a *CorruptRecordsError returned together
	// with the sound ones: a caller must treat that error as a partial
	// result, not as a failure with nothing in it.
	List(ctx context.Context, f Filter) ([]*Record, error)
	// Purge removes the settled records (Succeeded, Failed, and Expired
	// when p.IncludeUnknown) last updated before p.OlderThan: a named one created after
	// p.KeepNamesAfter is replaced by its tombstone, so Create with its
	// name still returns it; the others are deleted, and so are the
	// tombstones created at or before p.KeepNamesAfter (see
	// PurgeRequest.Action). Pending and Accepted records are never
	// purged. Damaged records that cannot be judged are left alone and
	// named in a *CorruptRecordsError returned with the result. On any
	// other error the result counts what was done before it.
	Purge(ctx context.Context, p PurgeRequest) (PurgeResult, error)
	// Close releases the store; later calls fail with ErrClosed.
	Close() error
}
