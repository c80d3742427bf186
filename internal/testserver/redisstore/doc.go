// Package redisstore is the reference server's testserver.Store in Redis:
// server/redisstore's idempotency records, with payments and operations
// beside them under the same prefix, in the key group of their principal
// (pay:/op:+hash(principal)+":"+id, a sorted set per principal, a payment
// counter per group), each effect committed in one script with its key's
// completion (server/redisstore's CommitEffect), on one Redis Cluster
// slot.
package redisstore
