package redisstore

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	"github.com/redis/go-redis/v9"
)

// script is a Lua script run by EVALSHA, falling back to EVAL when the
// server does not have it cached (a restarted node, a new cluster
// master). Unlike redis.Script it is never sent twice: see onceCmd.
type script struct{ src, hash string }

func newScript(src string) script {
	sum := sha1.Sum([]byte(src))
	return script{src: src, hash: hex.EncodeToString(sum[:])}
}

// run runs the script on keys and args through c, which routes it to the
// node of keys[0]'s slot.
func (s script) run(ctx context.Context, c redis.UniversalClient, keys []string, args ...any) *redis.Cmd {
	cmd := sendOnce(ctx, c, "evalsha", s.hash, keys, args)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") { // the script did not run
		cmd = sendOnce(ctx, c, "eval", s.src, keys, args)
	}
	return cmd
}

// onceCmd is a command go-redis never retries once it may have reached
// the server, whatever the client's MaxRetries: a script whose reply was
// lost (a connection reset, a node killed, a read timeout) may have run,
// and running it again would answer as if someone else held the key.
// Only the caller's retry under the same idempotency key resolves that
// safely. Redirects (MOVED, ASK) are still followed: they say the script
// did not run.
type onceCmd struct{ *redis.Cmd }

// NoRetry implements redis.Cmder.
func (onceCmd) NoRetry() bool { return true }

// sendOnce sends name (EVAL or EVALSHA) with body, keys and args once.
func sendOnce(ctx context.Context, c redis.UniversalClient, name, body string, keys []string, args []any) *redis.Cmd {
	cmdArgs := make([]any, 0, 3+len(keys)+len(args))
	cmdArgs = append(cmdArgs, name, body, len(keys))
	for _, k := range keys {
		cmdArgs = append(cmdArgs, k)
	}
	cmdArgs = append(cmdArgs, args...)
	cmd := redis.NewCmd(ctx, cmdArgs...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3)
	}
	_ = c.Process(ctx, onceCmd{cmd})
	return cmd
}
