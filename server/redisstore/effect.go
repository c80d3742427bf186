package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/idemkit/idem/server"
)

// ErrEffectRefused means an Effect's check refused it; nothing was
// written. The error names the check's reply.
var ErrEffectRefused = errors.New("redisstore: effect refused")

// Effect is a write of the API's own, in Lua, that commits in one atomic
// script with a key's completion: Redis's form of a transaction shared
// with the key (see CommitEffect).
type Effect struct{ withCompletion, alone script }

// NewEffect returns the effect whose Lua check runs first and returns
// nothing to go on, or a string to refuse the effect ("ok" and "fenced"
// are taken); write then makes the writes. Both find the effect's KEYS
// and ARGV from 1, as CommitEffect is given them (the completion's come
// after them). Redis does not roll a
// script back, so every check belongs in check: with a completion, the
// order is the token's compare-and-set, check, the completion, write.
func NewEffect(check, write string) *Effect {
	funcs := "\nlocal function check()\n" + check + "\nend\nlocal function write()\n" + write + "\nend\n"
	return &Effect{
		withCompletion: newScript(luaPrelude + funcs + `
local rec, n = KEYS[#KEYS - 1], #ARGV - 3
local created, fp = owner(rec, ARGV[n + 1])
if not created then return 'fenced' end
local refused = check()
if refused then return refused end
complete(rec, created, fp, n + 2)
write()
return 'ok'`),
		alone: newScript(funcs + `
local refused = check()
if refused then return refused end
write()
return 'ok'`),
	}
}

// CommitEffect runs e on keys and args and, with c non-nil, completes c's
// reservation in the same script: after a crash both are there or
// neither. It is the compare-and-set of Complete: server.ErrFenced, with
// nothing written, when c's token no longer owns the key. A refusal of
// e's check is ErrEffectRefused. In Redis Cluster, keys must share the
// slot of c's record: start them with KeyGroup of c's principal.
func (s *Store) CommitEffect(ctx context.Context, e *Effect, c *server.Completion, keys []string, args ...any) error {
	sc := e.alone
	if c != nil {
		cargs, err := completionArgs(*c)
		if err != nil {
			return err
		}
		sc = e.withCompletion
		keys = append(keys[:len(keys):len(keys)], s.keys.recordKeys(c.Reservation.Scope, c.Reservation.Key)...)
		args = append(args[:len(args):len(args)], cargs...) // the token, then the completion
	}
	answer, err := sc.run(ctx, s.client, keys, args...).Text()
	if err != nil {
		return fmt.Errorf("redisstore: effect: %w", err)
	}
	switch answer {
	case "ok":
		return nil
	case "fenced":
		s.logger.Info("redisstore: stale owner fenced on effect", "key_hash", server.KeyHash(c.Reservation.Key))
		return server.ErrFenced
	default:
		return fmt.Errorf("%w: %s", ErrEffectRefused, answer)
	}
}

// Client returns the store's Redis client, for reads of the API's own: a
// *redis.Client for one server, a *redis.ClusterClient for a Redis
// Cluster, or the client given to New.
func (s *Store) Client() redis.UniversalClient { return s.client }

// Prefix returns the prefix of every key the store writes.
func (s *Store) Prefix() string { return s.keys.prefix }

// KeyGroup returns the start of every key of principal's key group: the
// store's prefix and the group's hash tag. Keys an effect writes with a
// completion of principal's must start with it, so the script's keys
// share one Redis Cluster slot.
func (s *Store) KeyGroup(principal string) string { return s.keys.principalGroup(principal) }

// AllKeyGroups returns the start of every key group's keys, for reading
// what an API keeps per group (a counter, say) across the whole store.
func (s *Store) AllKeyGroups() []string {
	out := make([]string, KeyGroups)
	for g := range out {
		out[g] = s.keys.group(g)
	}
	return out
}

// RecordKey returns the Redis key holding the record of (scope, key).
func (s *Store) RecordKey(scope server.Scope, key string) string { return s.keys.record(scope, key) }
