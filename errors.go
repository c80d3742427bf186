package idem

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/idemkit/idem/keystore"
)

// Sentinel errors. Match them with errors.Is; a give-up wraps them in a
// *GiveUpError that carries the details.
var (
	// ErrIntentConflict: Begin was called with the name of an existing
	// intent but a different payload. A correction is a new intent.
	ErrIntentConflict = errors.New("idem: an intent with this name exists with a different payload")
	// ErrKeyReused: the server answered 422 /key-reused: the key was used
	// for another payload. Never retried.
	ErrKeyReused = errors.New("idem: server reports the idempotency key was reused for another payload")
	// ErrOutcomeUnknown: retries ran out while the request may have taken
	// effect. The intent stays pending and can be resumed with its key.
	ErrOutcomeUnknown = errors.New("idem: outcome unknown; the intent stays pending and can be resumed")
	// ErrKeyExpired: the intent is older than the server's retention, so
	// the server may have forgotten its key; resending could duplicate the
	// effect. Reconcile it by hand.
	ErrKeyExpired = errors.New("idem: intent is older than the server's key retention; not resent, reconcile it")
	// ErrBudgetExhausted: the client's retry budget is empty, so the call
	// stopped retrying to avoid multiplying load on a failing server.
	ErrBudgetExhausted = errors.New("idem: retry budget exhausted")
	// ErrFinalFailure: the server gave a final non-2xx answer (a 4xx other
	// than 409 in-progress and 422 key-reused, 501, 505).
	ErrFinalFailure = errors.New("idem: final failure response")
	// ErrOperationGone: the operation of an accepted intent (the Location
	// of its 202) answered 404 or 410 after WithOperationGrace: the server
	// no longer knows it, so its outcome cannot be learnt from the server.
	// The 202 proved the request was taken, so the intent stays Accepted
	// (never resent; a later Do polls again) and the error matches
	// ErrOutcomeUnknown too; the Reconciler, when there is one, is asked.
	// Reconcile it (Client.Reconcile, Client.Settle, `idem intents
	// settle`). Records of earlier versions made such an intent Failed;
	// they can be settled the same way.
	ErrOperationGone = errors.New("idem: the accepted operation is gone from the server; reconcile it")
	// ErrOperationUnknown: an accepted intent's operation answered in a way
	// that ends polling but proves nothing of its outcome: a 4xx to the
	// poll (other than 404/410, 401/403/407 and the retryable ones), or an
	// operation document whose status the dialect does not document (see
	// dialect.OperationUnknown). The intent stays Accepted, the error
	// matches ErrOutcomeUnknown too, and the Reconciler, when there is one,
	// is asked.
	ErrOperationUnknown = errors.New("idem: the accepted operation's answer does not prove its outcome; reconcile it")
	// ErrOperationFailed: the operation of an accepted intent reports
	// that it failed or was canceled (a document whose status says so,
	// as the dialect reads it). The intent is Failed with that document
	// stored. It matches ErrFinalFailure too.
	ErrOperationFailed = fmt.Errorf("%w: the accepted operation reports failure", ErrFinalFailure)
	// ErrRetriesExhausted: every attempt allowed was made without a final
	// answer.
	ErrRetriesExhausted = errors.New("idem: retries exhausted")
	// ErrWaitBeyondDeadline: the next wait (backoff or Retry-After) would
	// outlive the context deadline, so it was not started.
	ErrWaitBeyondDeadline = errors.New("idem: next retry would outlive the context deadline")
	// ErrInvalidRequest: the request given to Begin (or Transport) cannot
	// be made an intent: nil, no URL, an unsupported scheme, a body over
	// MaxBodySize, or an Idempotency-Key of its own.
	ErrInvalidRequest = errors.New("idem: invalid request")
	// ErrBodyConsumed: the request given to Begin (or Transport) has a
	// body that was already read (by a logger, a signer, an earlier
	// send): it yields fewer bytes than it declares, or none at all
	// without GetBody to read it again. Storing what is left would make
	// another payment under the intent's key. Give the request a GetBody
	// (http.NewRequest does, for a bytes, strings or bytes.Buffer reader)
	// or a fresh body; an empty body is http.NoBody or nil. It matches
	// ErrInvalidRequest too.
	ErrBodyConsumed = fmt.Errorf("%w: the request body was already read", ErrInvalidRequest)
	// ErrStoreTimeout: the keystore did not answer within its bound (the
	// store timeout, WithStoreTimeout, or the write grace after the
	// call's deadline, WithWriteGrace): a stalled connection, a disk that
	// blocks. The intent stays as the keystore last recorded it (Pending,
	// resumable with its key; a write cut short may still complete):
	// Resume it once the keystore answers.
	ErrStoreTimeout = errors.New("idem: the keystore did not answer in time")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("idem: client closed")
	// ErrClientNotOpen: the Client was not built by New (a zero value or
	// a nil pointer): it has no keystore, so nothing is begun or sent.
	// Build it with idem.New.
	ErrClientNotOpen = errors.New("idem: client not built by idem.New (a zero value has no keystore); use idem.New")
	// ErrIntentBusy: the keystore is shared (it implements
	// keystore.Claimer) and another live worker holds the intent's claim,
	// so Do sent nothing. The intent stays as it was; try it again once
	// that worker is done or its claim has run out (WithClaimLease).
	ErrIntentBusy = errors.New("idem: another worker holds the intent")
	// ErrVerdictConflict: the server answered an attempt that was in
	// flight when a verdict settled the intent by force (Settlement.Force,
	// `idem intents settle --force`), and the answer contradicts the
	// verdict: a 2xx or 202 for an intent settled as failed, a final
	// refusal for one settled as succeeded. The verdict stays and the
	// answer is kept in the intent's audit trail as conflicting evidence;
	// the error is a *VerdictConflictError carrying the answer. The effect
	// may have happened: never pay again on this error; a person must
	// weigh the evidence (`idem intents show`).
	ErrVerdictConflict = errors.New("idem: the server's answer conflicts with the verdict recorded for the intent")
	// ErrCredentialsMissing: the intent was begun with credentials (a
	// secret header such as Authorization) that the attempt lacks, so
	// nothing was sent: the server scopes keys by principal, and the key
	// sent without them would be a new intent there. Supply them with a
	// fresh Begin of the same name or WithRequestEditor. The error names
	// the header.
	ErrCredentialsMissing = errors.New("idem: the intent's credentials are missing; not sent")
	// ErrCredentialsMismatch: the attempt carries credentials for another
	// principal than the intent was begun with (another token, another
	// tenant), so nothing was sent. If both name one account (a rotated
	// key), say so with WithPrincipal.
	ErrCredentialsMismatch = errors.New("idem: the credentials name another principal than the intent's; not sent")
	// ErrIntentUncertain: Begin's write to the keystore failed in a way
	// that leaves open whether the intent was stored (a lost
	// acknowledgement, a failed sync), and the keystore could not be
	// asked afterwards. The error is an *UncertainIntentError that carries
	// the key: Resume it once the keystore answers, and never begin the
	// same payment under a new key meanwhile.
	ErrIntentUncertain = errors.New("idem: the keystore may or may not hold the new intent")
	// ErrLocked: another process holds the keystore. It is
	// keystore.ErrLocked, repeated here so callers need one import.
	ErrLocked = keystore.ErrLocked
)

// GiveUpError is what a call that stopped without a successful answer
// returns. Reason is one of the sentinels above (or a context error);
// errors.Is matches Reason and LastErr, errors.As finds the details.
type GiveUpError struct {
	// Reason says why the call stopped.
	Reason error
	// Attempts is the number of attempts this call made.
	Attempts int
	// LastStatus is the last HTTP status seen, 0 if none.
	LastStatus int
	// LastErr is the last transport error, nil if none.
	LastErr error
	// RetryAfter is the last Retry-After hint the server gave, 0 if none.
	RetryAfter time.Duration
	// Key is the intent's idempotency key, "" for ephemeral calls.
	Key string
	// Response is the last answer, body in memory, when Transport gave up
	// with one (a RoundTripper cannot return both); nil otherwise (Do
	// returns it as its response).
	Response *http.Response
	// OutcomeUnknown is set when some attempt may have taken effect on the
	// server without the client learning the answer. errors.Is(err,
	// ErrOutcomeUnknown) is then true whatever the Reason; the intent stays
	// pending and a resume with the same key settles it.
	OutcomeUnknown bool
}

// Error describes the give-up in one line.
func (e *GiveUpError) Error() string {
	var b strings.Builder
	b.WriteString("idem: gave up")
	if e.Reason != nil {
		fmt.Fprintf(&b, ": %v", strings.TrimPrefix(e.Reason.Error(), "idem: "))
	}
	fmt.Fprintf(&b, " (attempts=%d", e.Attempts)
	if e.LastStatus != 0 {
		fmt.Fprintf(&b, ", last status=%d", e.LastStatus)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, ", retry-after=%s", e.RetryAfter)
	}
	b.WriteString(")")
	if e.LastErr != nil {
		fmt.Fprintf(&b, ": %v", e.LastErr)
	}
	return b.String()
}

// Unwrap returns Reason and LastErr, so errors.Is sees both.
func (e *GiveUpError) Unwrap() []error {
	var errs []error
	if e.Reason != nil {
		errs = append(errs, e.Reason)
	}
	if e.OutcomeUnknown && e.Reason != ErrOutcomeUnknown {
		errs = append(errs, ErrOutcomeUnknown)
	}
	if e.LastErr != nil {
		errs = append(errs, e.LastErr)
	}
	return errs
}

// UncertainIntentError is Begin's error when the keystore may hold the new
// intent without having said so. It matches ErrIntentUncertain and the
// keystore's error.
type UncertainIntentError struct {
	// Key is the key the intent was stored under, if it was.
	Key string
	// Name is the business name given to Begin.
	Name string
	// Err is the keystore's last error.
	Err error
}

// Error says what is uncertain; it names the key by its hash only.
func (e *UncertainIntentError) Error() string {
	return fmt.Sprintf("idem: the keystore may or may not hold the new intent (key hash %s); resume it by its key once the keystore answers: %v", keyHash(e.Key), e.Err)
}

// Unwrap returns ErrIntentUncertain and the keystore's error.
func (e *UncertainIntentError) Unwrap() []error { return []error{ErrIntentUncertain, e.Err} }
