// Package frameworks is a test module of its own: it mounts idem's server
// layer in the stacks APIs already run (http.ServeMux, chi, echo through
// echo.WrapMiddleware and through a native middleware, gin through
// gin.WrapH and through a native middleware), with a compression
// middleware and http.TimeoutHandler on either side of the layer, on the
// memory store and on pgstore, and holds every cell to the layer's
// promises: one effect per key under concurrent duplicates and under a
// SIGKILL of the service, replays byte-identical to the first answer, and
// no byte of one request's answer in another's.
//
// It is a module of its own (its go.mod replaces github.com/idemkit/idem
// with this checkout) so that chi, echo and gin never become dependencies
// of idem. The main module's `go test ./...` runs it through
// internal/outsidetest (TestFrameworkMatrix).
//
// The package holds what the tests and the service binary (cmd/paysvc)
// share: the payments handler with its counted effect, the stacks, and the
// native echo and gin middlewares.
package frameworks
