// Package peerbench holds the peer servers bench/cmd/serverbench measures
// idem's server layer against: the same payments app on Fiber v2, with
// and without Fiber's own idempotency middleware
// (github.com/gofiber/fiber/v2/middleware/idempotency), on its memory
// storage, on Postgres and on Redis (fiberapp, cmd/peerserver).
//
// It is a module of its own, so that Fiber and its storages never become
// dependencies of idem.
package peerbench
