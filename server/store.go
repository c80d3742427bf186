package server

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Errors a Store returns. Callers match them with errors.Is.
var (
	// ErrFenced means the caller's fencing token no longer owns the key:
	// its lease expired and another request took the key over, or the key
	// was completed or released already. Nothing was written.
	ErrFenced = errors.New("server: fencing token does not own the key")
)

// DefaultReservationGrace is how long a store keeps a reservation after
// its lease ended, unless told otherwise: as long as DefaultRetention
// keeps a completed record, so a client that retries within the window
// in which it could replay a response can also take over the reservation
// its crashed first attempt left.
const DefaultReservationGrace = DefaultRetention

// Scope names who owns an idempotency key: the principal (the bearer
// token), the method and the route. The same key in two scopes names two
// unrelated intents.
type Scope struct {
	Principal string
	Method    string
	Route     string
}

// RecordState is the life stage of an idempotency record.
type RecordState string

const (
	// StateReserved: a request owns the key and its handler may be running.
	StateReserved RecordState = "reserved"
	// StateCompleted: the handler finished and its response is stored.
	StateCompleted RecordState = "completed"
)

// Response is what the idempotency layer stores and replays.
type Response struct {
	Status int
	// Header holds only the headers a client needs on a replay
	// (Content-Type, Location and the ones the handler marks).
	Header http.Header
	// Body is replayed byte for byte.
	Body []byte
	// ResourceID is the id of the resource the request created, if any.
	ResourceID string
}

// Record is one idempotency key in one scope, as the store holds it.
type Record struct {
	Scope       Scope
	Key         string
	Fingerprint string
	State       RecordState
	// Token is the fencing token of the current owner while reserved.
	Token string
	// LeaseExpires is when a reservation may be taken over.
	LeaseExpires time.Time
	// Response is set once the record is completed.
	Response  *Response
	CreatedAt time.Time
	// ExpiresAt is the end of the retention window of a completed record;
	// after it the key is treated as new.
	ExpiresAt time.Time
}

// Reservation is proof that a request owns (scope, key) under a fencing
// token. Completing or releasing it is a compare-and-set on Token.
type Reservation struct {
	Scope       Scope
	Key         string
	Fingerprint string
	Token       string
}

// Completion asks a store to complete a reservation in the same atomic
// step as an effect (a payment or an operation), so a crash can never keep
// one without the other.
type Completion struct {
	Reservation Reservation
	Response    Response
	// Retention is how long the completed record is kept.
	Retention time.Duration
	// Timeout, when positive, bounds the transaction that commits the
	// effect with this completion (Held.Completion sets the layer's store
	// timeout): a store's transactional hook (pgstore's CompleteBatch and
	// CompleteTx) gives up and rolls back when it runs out, with a
	// *StoreTimeoutError, so a lock on the effect's table cannot hold the
	// request until its client leaves. Complete ignores it: the layer
	// bounds its own calls.
	Timeout time.Duration
}

// Store keeps idempotency records. Every method is safe for concurrent
// use. Implementations must make Reserve an atomic create-if-absent (never
// check-then-insert) and Complete and Release a compare-and-set on the
// fencing token. Times are read from the store's own clock. MemoryStore,
// pgstore and redisstore implement it; storetest is the contract suite.
type Store interface {
	// Reserve tries to take (scope, key). It succeeds, returning a
	// reservation with a fresh random token, when no record exists, when
	// the existing reservation's lease has expired (takeover), or when the
	// completed record is past its retention. Otherwise it returns the
	// existing record and a nil reservation. An expired lease is taken
	// over only by the same fingerprint: another payload under the key is
	// a reused key, so the record is returned instead.
	Reserve(ctx context.Context, scope Scope, key, fingerprint string, lease time.Duration) (*Reservation, *Record, error)
	// Complete stores resp as the final answer for the reservation.
	// ErrFenced when the token no longer owns the key.
	Complete(ctx context.Context, c Completion) error
	// Release frees the key so a retry runs again. ErrFenced when the
	// token no longer owns the key.
	Release(ctx context.Context, r Reservation) error
	// Sweep deletes up to limit records no request can need any more and
	// returns how many it deleted. Those are completed records past their
	// retention, and abandoned reservations: reservations whose lease
	// ended more than the store's reservation grace ago (default
	// DefaultReservationGrace), left by an owner that crashed and never
	// retried with the same payload. A reservation within its lease, or
	// whose lease ended less than the grace ago, is never deleted, so a
	// retry with the same payload can still take it over. A store may
	// also drop a due record by itself before any Sweep (Redis expires
	// keys), but never earlier.
	Sweep(ctx context.Context, limit int) (int, error)
	// Close releases the store's resources.
	Close() error
}
