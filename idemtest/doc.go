// Package idemtest runs the idem reference server in process, for tests
// of code that talks to an API honouring Idempotency-Key. It is shaped
// like net/http/httptest: NewServer starts a server on a loopback port and
// registers its Close with the test, the URL field is its base URL, and
// Client returns a client configured for it.
//
// The server speaks the payments API of the reference server:
//
//	POST /v1/payments        {"amount":1000,"currency":"EUR","reference":"…"} → 201
//	GET  /v1/payments/{id}   the caller's payment
//	GET  /v1/payments        {"object":"list","has_more":…,"data":[…newest first…],"total":N}
//	                         (?limit= 1–100, default 10; ?starting_after=<id>)
//	POST /v1/payouts         → 202 with Location: /v1/operations/{id}
//	GET  /v1/operations/{id} "pending", then "succeeded"
//
// POST requests need an Idempotency-Key; "Authorization: Bearer <token>"
// names the principal (kept as a keyed hash of the token; Payments takes
// the token), and no Authorization is AnonymousPrincipal, which no token,
// not even "anonymous", shares. WithAccounts gives accounts several
// tokens each, scoping keys by account: a retry under a renewed token of
// the account is replayed, as a client that refreshes its OAuth token
// needs.
//
// Faults are injected from the test to prove a client survives them:
// FailNext answers an error before anything executes, ResetNext resets
// the connection before anything executes, LoseNextResponses executes the
// request and then drops the answer, and SetHandlerDelay holds requests
// after their key is reserved so duplicates see 409. PaymentCount,
// Payments and Requests tell what reached the server.
//
// net/http's Transport may silently resend a request carrying an
// Idempotency-Key over a fresh connection when a reused keep-alive
// connection fails. To see a dropped connection as an error, send over a
// client that does not reuse connections.
//
// RunConformance and Conformance check that any server, this one or
// yours, follows the protocol.
package idemtest
