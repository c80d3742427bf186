// Package truthtest is the generated-scenario truth test of the idem
// client: a scripted adversarial HTTP server that keeps a ledger of the
// effects it made per idempotency key and per business intent, a
// generator of scenarios (server answers, lost answers, 202 operations and
// their polls, client restarts, credential refreshes, operator settles and
// purges), and a driver that plays a scenario against idem's public API
// and checks, after each one, that the client's record is true:
//
//   - no intent has more than one effect in the ledger;
//   - an intent recorded Failed (or reported to its caller as a final
//     failure) has no effect;
//   - an intent recorded Succeeded (or reported to its caller as a
//     success) has exactly one;
//   - no secret (an Authorization value, an API key header, a secret query
//     parameter) appears in the keystore file, the logs, an error, or a
//     request to another origin.
//
// The server lies only as a real one might: it loses answers before or
// after the effect, puts a gateway's answer in front of its own, delays,
// forgets keys after its retention, and answers polls with any status or
// document; it never executes one key twice while it remembers it, and it
// never claims a request was not executed when it was, since no client can
// defend against that.
//
// TestTruth runs a small budget of generated scenarios; FuzzTruth decodes
// a fuzz input into a scenario:
//
//	go test -run '^$' -fuzz FuzzTruth -fuzztime 30m ./internal/truthtest/
package truthtest
