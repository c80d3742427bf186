// Package outsidetest proves that a Go service outside this module can
// guard its own routes with the public packages alone and pass `idem
// check`. Its tests write a small charges API (testdata/shop) into a
// temporary directory as a module of its own, example.com/shop, that
// requires github.com/idemkit/idem through a replace directive pointing at
// this repository; build it and the idem CLI with the go command, offline
// from the module cache; run the service on a free loopback port; and run
// `idem check --json --strict` against its routes.
//
// Because the shop is another module, Go's rules refuse it any internal
// package of idem (a test shows the refusal), so what it compiles against
// is the public API. The tests skip only when the go command is not found.
package outsidetest
