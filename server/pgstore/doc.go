// Package pgstore is a server.Store kept in PostgreSQL, so several
// replicas of an API share one set of idempotency keys, and a handler's
// effect commits in the same transaction as the key's completion
// (CompleteTx).
//
// # Guarantees
//
//   - Reserve is an INSERT … ON CONFLICT DO NOTHING on a unique
//     constraint over (principal, method, route, key): two replicas
//     racing for one key cannot both win. Only when a record is there
//     does a second round trip take it over (its lease or retention
//     ended) or read it.
//   - Leases and retention are compared against the database clock
//     (statement_timestamp(), the start of the statement), never the
//     replicas' clocks, so clock skew between hosts cannot hand a key to
//     two owners.
//   - Complete, Release and CompleteTx are compare-and-set on the fencing
//     token: a stale owner's write changes nothing and returns
//     server.ErrFenced.
//   - With CompleteTx the handler's rows and the key's completion are
//     written in the caller's transaction: after a crash either both are
//     there or neither is. CompleteBatch does the same for statements
//     known in advance, in one round trip.
//   - Everything is committed before a call returns, so a server restart
//     loses nothing (given PostgreSQL's default synchronous_commit = on).
//     With WithAsyncReservations, Reserve alone commits without waiting
//     for the log flush: one durable commit per request instead of two,
//     safe when every effect commits with its completion (see the
//     option).
//
// # Schema
//
// Open and New create the store's table in one schema (default "idem") if they are
// missing, under a transaction-scoped advisory lock so replicas starting
// together do not race on the DDL, and upgrade a table an earlier
// version created in place (it drops the CHECK constraints this version
// no longer has). Sweep deletes expired completed records
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
