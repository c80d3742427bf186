// Package checkpeers grades servers nobody in this project wrote with
// `idem check`: Fiber v2's idempotency middleware in a small payments app
// (fiberpay) and a server written from the text of
// draft-ietf-httpapi-idempotency-key-header-07 alone (draftserver), each
// run twice, and the reference server (`idem serve`) at the idem profile.
// Its tests assert that both runs give the same verdicts and that each
// verdict is true to the code of the server it grades: every FAIL is a
// gap named with the line of the server's source that makes it, every
// PASS is proven by the server's own ledger of effects and answers.
//
// It is a module of its own, so that Fiber never becomes a dependency of
// idem; the main module's tests run it (internal/outsidetest).
package checkpeers
