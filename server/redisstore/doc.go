// Package redisstore is a server.Store kept in Redis, so several
// replicas of an API share one set of idempotency keys, and an effect the
// API keeps in Redis commits in one script with its key (CommitEffect).
//
// # How it works
//
// Every operation is one Lua script, which Redis runs atomically, and a
// record is one Redis string written by one SET … PXAT: its state, lease
// or expiry, creation time, token and fingerprint in a short head the
// scripts read, then the response in a length-prefixed form only Go
// reads (record.go). A request costs two scripts, the reservation and
// the completion, of four Redis commands each:
//
//   - Reserve is SET NX PXAT GET, which creates the reservation if the
//     key is absent and otherwise returns the record, so a replay needs
//     no second read; it takes over a reservation whose lease has run
//     out (same fingerprint only) in the same script.
//   - Complete, Release and CommitEffect first compare the caller's
//     fencing token with the record's (one GET); on a mismatch nothing
//     is written and the call returns server.ErrFenced.
//   - Leases are compared against the Redis server's clock (TIME inside
//     the script), never the replicas' clocks.
//   - Retention is the key's expiry (PXAT) set when a record completes:
//     Redis frees an expired record itself, sweep or no sweep. Completing
//     also indexes the record by its expiry in one sorted set, which Sweep
//     works through in batches so it can report what left the store and
//     keep the index small. A reservation carries an expiry, and an
//     index entry, at the end of its lease plus WithReservationGrace, so
//     one abandoned by a crashed owner leaves the store then.
//
// Records written by earlier versions, which kept a record as a hash, are
// still read, replayed, completed, released and swept; each is rewritten
// as a string when it is next written, so a store upgraded in place keeps
// its keys. A replica of an earlier version cannot read the string form:
// it fails such a request (503) rather than run it twice, so finish an
// upgrade before relying on the old replicas again.
//
// # Redis version
//
// The store needs Redis 7.0 or later (or a server compatible with it,
// such as Valkey): SET's PXAT option came in 6.2, and NX together with GET
// in 7.0. Open refuses an older server with ErrUnsupportedServer.
//
// Redis does not roll back a script that fails halfway. Every check runs
// before the first write, so only a write refused mid-script (out of
// memory) could split an effect from its completion; the completion is
// written first, so such a split can replay a resource that is missing
// but never execute a request twice.
//
// # Durability: read this before using it for money
//
// Redis acknowledges a write once it is in memory. Unless the server runs
// with AOF and `appendfsync always`, a crash or restart can lose writes
// that were already acknowledged — the default `appendfsync everysec`
// loses up to a second of them, and a server started with
// `--save "" --appendonly no` (as on the project's CI and development
// machines) forgets every key on restart. A forgotten key means a retry
// after the restart executes the request again: the exactly-once promise
// holds only as long as Redis keeps its data. Replication is asynchronous
// too, so a failover can lose acknowledged writes the same way. Use
// package pgstore where that is not acceptable.
//
// # Keys
//
// All keys start with the store's prefix (default "idem:"), then the hash
// tag of one of KeyGroups key groups, chosen by the scope's principal:
// prefix+"{g7}:rec:"+hash(scope, key) for a record, beside its group's
// expiry index prefix+"{g7}:expiries". Every script touches the keys of
// one group, so the store works on Redis Cluster with any prefix, spread
// over up to KeyGroups slots; an effect's keys start with KeyGroup of the
// principal. A prefix with a hash tag of its own ("{idem}:") puts the
// whole store in that one slot instead.
//
// # Redis Cluster and clients of your own
//
// Open takes go-redis's URL forms: one server, a Redis Cluster by several
// nodes (redis://host:p1?addr=host:p2&addr=host:p3), or by one node, which
// Open finds to be a cluster node. New takes any redis.UniversalClient: a
// cluster client, a Sentinel failover client, a ring. Each script runs on
// the master of its key group's slot; the start-up check runs on every
// master; Sweep runs every group's script on that group's master, and
// when one is down sweeps the others and reports the groups it could not
// reach. A master that is down fails the calls for its slots, which the
// layer answers 503, while the others go on.
//
// # Deadlines and retries
//
// Every call honours its context's deadline — the layer's
// server.WithStoreTimeout — as the clients Open builds set go-redis's
// ContextTimeoutEnabled; New refuses a go-redis client without it
// (ErrContextTimeoutDisabled). go-redis's ReadTimeout and WriteTimeout
// (read_timeout=, write_timeout= in the URL) bound calls without a
// deadline. A script is sent once, whatever the client's MaxRetries: one
// whose reply was lost may have run, and only the caller's retry under
// the same idempotency key resolves that safely. MOVED and ASK redirects
// are followed: they mean the script did not run.
//
// # Start-up check
//
// Open reads the server's configuration (CONFIG GET) and refuses, with
// ErrUnsafeServer, a Redis that persists nothing (appendonly no and
// save "") or whose maxmemory-policy may evict records once maxmemory is
// reached: anything but noeviction, since every record carries a TTL and
// the volatile-* policies evict exactly such keys. WithAllowVolatile
// overrides the refusal for tests and throwaway data, logging each reason
// at Error. Snapshots without AOF, or appendfsync other than always, are
// logged as warnings; a server that will not answer CONFIG (renamed or
// disabled, as on some managed services) is used with a warning. On a
// cluster every master is checked, and a refusal names the master.
package redisstore
