// Package pgstore is a testserver.Store kept in PostgreSQL, so several
// replicas of the reference server share one set of idempotency keys and
// a key's completion commits in the same transaction as the payment it
// answers for.
//
// # Guarantees
//
//   - Reserve is an INSERT … ON CONFLICT on a unique constraint over
//     (principal, method, route, key): two replicas racing for one key
//     cannot both win.
//   - Leases and retention are compared against the database clock
//     (clock_timestamp()), never the replicas' clocks, so clock skew
//     between hosts cannot hand a key to two owners.
//   - Complete, Release and the completion passed to CreatePayment and
//     CreateOperation are compare-and-set on the fencing token: a stale
//     owner's write changes nothing and returns testserver.ErrFenced.
//   - The payment or operation row and the key's completion are written in
//     one transaction: after a crash either both are there or neither is.
//   - Everything is committed before a call returns, so a server restart
//     loses nothing (given PostgreSQL's default synchronous_commit = on).
//
// # Schema
//
// Open creates its tables in one schema (default "idem") if they are
// missing, under a transaction-scoped advisory lock so replicas starting
// together do not race on the DDL. Sweep deletes expired completed records
// and abandoned reservations (WithReservationGrace) in bounded batches;
// run it periodically.
//
// # Connections
//
// The pool holds 16 connections unless WithMaxConns or the DSN's
// pool_max_conns says otherwise: each request waits on the database, not
// on a CPU, so the pool is sized for requests in flight rather than by
// pgxpool's CPU-based default.
package pgstore
