// Package idem makes unsafe HTTP calls (payments, orders, transfers) safe
// to retry. One business intent owns one idempotency key for its whole
// life; the key is written to a local keystore before the first byte
// leaves, and reused for every retry and every resume after a crash, so
// one intent has at most one effect on a server that honours
// Idempotency-Key.
//
// # The story
//
//	client, err := idem.New(idem.WithBoltStore("payments.db", nil))
//	...
//	defer client.Close()
//
//	req, _ := http.NewRequest("POST", api+"/v1/payments", body)
//	req.Header.Set("Authorization", "Bearer "+token)
//	in, err := client.Begin(ctx, "order-42/payment", req) // key born and persisted here
//	resp, err := client.Do(ctx, in)                       // sent, retried, answer stored
//
// Begin reads the request, fingerprints its payload (SHA-256 over method,
// URL and the RFC 8785 canonical JSON body, or the raw body), generates a
// key (UUIDv4 from crypto/rand by default) and stores the intent before it
// returns. With a non-empty name, Begin is idempotent itself: the same
// name and payload give back the same intent and key, after a restart
// too, and a different payload under that name is ErrIntentConflict.
// BeginTx does the same inside a database transaction of the caller's
// (the Postgres keystore's), so an API's own rows and the intent of the
// call it makes commit together; the call is sent after the commit.
//
// Do sends the intent with its key, judges every answer with the
// client's dialect (WithDialect; default dialect.Draft, the IETF draft
// plus this project's protocol) and retries what is safe to retry. Waits
// use full-jitter exponential backoff, added on top of the server's
// Retry-After when it sends one (capped, see RetryWait), so clients told
// the same hint do not return together; a wait that would outlive the
// context's deadline is not started, and a per-client retry budget keeps
// an outage from multiplying load. The answer is stored, so a later Do on
// a settled intent replays it locally without the network (IsReplay).
//
// # What each answer means
//
// idem keeps a true record: an intent is never recorded Failed while its
// payment may have been made. Once an attempt may have taken effect (a
// transport error after the request may have been written, any 5xx, a 409
// in progress), that is persisted with the intent (MayHaveExecuted), and
// from then on only an answer that proves the outcome settles it. With
// dialect.Draft:
//
//	answer                        fresh intent                after a possible effect
//	2xx, a replay, 303 See Other  Succeeded                   Succeeded
//	202 with Location             Accepted, polled            Accepted, polled
//	409, whatever its body        retried (Retry-After)       retried (Retry-After)
//	408, 425, 429                 retried                     retried
//	5xx other than 501, 505       retried                     retried
//	422 .../key-reused            Failed, ErrKeyReused        Pending, ErrOutcomeUnknown
//	400 .../invalid-key           Failed, ErrFinalFailure     Failed, ErrFinalFailure
//	401, 403, 407, other 4xx      Failed, ErrFinalFailure     Pending, ErrOutcomeUnknown
//	501, 505                      Failed, ErrFinalFailure     Pending, ErrOutcomeUnknown
//	301, 302, other 3xx           Pending, ErrOutcomeUnknown  Pending, ErrOutcomeUnknown
//	transport error, unwritten    retried                     retried
//	transport error, written      retried (keyed)             retried (keyed)
//
// "Fresh" means this Client began the intent and nothing was sent since,
// or every attempt was answered "not executed" (408, 425, 429, a store
// that failed closed); an intent read back from the keystore after a
// restart is never fresh, since its first process may have sent it just
// before dying. A 3xx is never followed as a GET; a 303 says the server
// processed the request (RFC 9110 §15.4.4), a 301 or 302 may follow a
// processed POST or none. When retries run out, the intent stays Pending and the
// error matches ErrOutcomeUnknown if an attempt may have taken effect.
// A provider dialect (dialect.Stripe, ...) maps its own answers onto the
// same verdicts (see package dialect).
//
// Where resending cannot settle an intent (a refusal after a possible
// effect, a 301/302, an intent older than the key retention), Do asks the
// Reconciler given with WithReconciler, which asks the provider by the
// intent's key or by a reference of the caller's own; its verdict, with
// its evidence, settles the intent and stays in its audit trail
// (Intent.Reconciliations). Client.Reconcile runs it on demand, and
// Client.Settle (or `idem intents settle`) records a person's verdict.
//
// Every request on the wire is an attempt the client decided and counted:
// net/http's own silent resend of a request carrying an Idempotency-Key
// on a reused connection is switched off.
//
// A 202 with a Location makes the intent Accepted: the original request is
// never sent again, and its operation (the Location) is polled, bounded by
// WithPolling, until it is final. A final document makes the intent
// Succeeded; an operation still pending leaves it Accepted, and a later Do
// polls again. Only a status word the dialect documents settles it; any
// other word, a 4xx to the poll, or an operation that answers 404 or 410
// once its 202 is older than WithOperationGrace (a server may take a moment
// to show a new operation) proves nothing about a request the 202 proved
// was taken: the intent stays Accepted, the error matches ErrOperationGone
// or ErrOperationUnknown, and ErrOutcomeUnknown, and the Reconciler is asked.
// 401, 403 and 407 say the poll lacked credentials. Supply them after a restart
// through WithRequestEditor: a server that hides an operation from a
// caller without them behind a 404 would make it look gone. An accepted intent whose 202 is older than
// the retention, and whose operation is gone or gives no answer, is
// Expired; one the server still reports pending is followed whatever its
// age. So no intent stays Accepted, and listed by Pending, for ever unless
// the server keeps saying it is pending.
//
// A Host given to Begin (req.Host, a virtual host reached through another
// address) is stored with the intent and sent on every attempt, after a
// restart too.
//
// After a crash, Pending lists the intents not settled yet and Do resumes
// each with its original key; the server replays what already happened.
// Credentials are never written to the keystore: after a restart they come
// from a fresh Begin with the same name or from WithRequestEditor. They
// are part of the intent all the same: Begin records which secret headers
// (and secret query parameters) it carried and a keyed fingerprint of its
// principal, and an attempt without them, or with another principal's, is
// not sent (ErrCredentialsMissing, ErrCredentialsMismatch), since the
// server would take the key for a new payment in another scope. Business
// names are scoped by principal (see WithPrincipal). A key may be chosen
// by the caller (WithIntentKey, DeriveKey) where it must follow from a
// business identifier.
//
// For an existing API client, Transport returns an http.RoundTripper that
// adds an ephemeral key to POST and PATCH and retries with the same
// policy.
//
// # Errors
//
// A call that stops without a final answer returns a *GiveUpError whose
// Reason says why, matched with errors.Is:
//
//   - ErrRetriesExhausted: every allowed attempt was made.
//   - ErrBudgetExhausted: the client's retry budget is empty.
//   - ErrWaitBeyondDeadline: the next wait would outlive ctx's deadline;
//     RetryAfter carries the server's hint.
//   - ErrOutcomeUnknown: also matched whenever an attempt may have taken
//     effect; the intent stays Pending and a resume settles it.
//   - ErrKeyExpired: the intent is older than the server's retention (or
//     its 202 is, and the operation is gone or silent); it is not resent,
//     reconcile it by hand.
//   - ErrKeyReused, ErrFinalFailure: the server's final refusal of an
//     intent that cannot have taken effect; the intent is Failed and the
//     response comes back with the error.
//   - ErrOperationFailed (which matches ErrFinalFailure too): an accepted
//     intent's operation document says the work failed or was canceled.
//   - ErrOperationGone: an accepted intent's operation answered 404 or
//     410 after the grace; the intent stays Accepted (matching
//     ErrOutcomeUnknown too), and what became of the request is for a
//     reconciliation to find out.
//   - ErrOperationUnknown: an accepted intent's operation answered a 4xx,
//     or a status word the dialect does not document; as for
//     ErrOperationGone, the intent stays Accepted for a reconciliation.
//
// ErrIntentConflict comes from Begin, ErrInvalidRequest from a request
// that cannot be sent, ErrNotReconcilable from Reconcile or Settle on an
// intent the server's own answer settled, ErrLocked from a keystore another process holds,
// ErrClosed from a closed Client.
//
// # Defaults
//
// In-memory keystore (use WithBoltStore or WithStore to survive restarts),
// 5 attempts per call, backoff base 100 ms and cap 10 s, Retry-After
// ceiling 60 s, an adaptive retry budget (AdaptiveBudget: a bucket of 100
// retries, refilled by one per accepted attempt and by 10 a second; when
// it is empty a retry waits, after its backoff, for the token the next
// accept brings if the last second saw any, and is refused if it saw none
// (after half a second of patience, during which up to 150 retries are
// held, unsent, for a first accept), so an overloaded server is retried
// at the pace it accepts and a server that is down costs one attempt per
// call plus 10 a second; WithBudget(NewBudget(...))
// restores a fixed bucket), key retention 24 h, polling every 1 s for at most 30 s, a 1 min grace for an
// operation not found yet, a pooled HTTP client
// with a 30 s per-attempt timeout, and no logging. When a logger is given,
// keys appear only as a short hash and bodies never.
package idem
