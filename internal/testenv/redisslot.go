package testenv

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// RedisClusterSlots is the number of hash slots of a Redis Cluster.
const RedisClusterSlots = 16384

// RedisKeySlot returns the Redis Cluster hash slot of key: CRC16 (XMODEM)
// of the key, or of its hash tag (the text between the first "{" and the
// next "}", when not empty), modulo 16384, as Redis computes it.
func RedisKeySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(crc16(key)) % RedisClusterSlots
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0).
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// ScriptKeys records the keys of every script a Redis client runs (EVAL
// and EVALSHA), one list per call: add it to a client with AddHook.
type ScriptKeys struct {
	mu    sync.Mutex
	calls [][]string
}

// Calls returns the key lists recorded so far.
func (s *ScriptKeys) Calls() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]string(nil), s.calls...)
}

// CrossSlotCalls describes every recorded call whose keys do not all
// share one slot.
func (s *ScriptKeys) CrossSlotCalls() []string {
	var out []string
	for _, keys := range s.Calls() {
		for _, k := range keys[1:] {
			if RedisKeySlot(k) != RedisKeySlot(keys[0]) {
				out = append(out, fmt.Sprintf("%q", keys))
				break
			}
		}
	}
	return out
}

// DialHook implements redis.Hook.
func (s *ScriptKeys) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

// ProcessHook implements redis.Hook.
func (s *ScriptKeys) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.record(cmd.Args())
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (s *ScriptKeys) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			s.record(cmd.Args())
		}
		return next(ctx, cmds)
	}
}

func (s *ScriptKeys) record(args []any) {
	if len(args) < 3 {
		return
	}
	name, _ := args[0].(string)
	if !strings.EqualFold(name, "eval") && !strings.EqualFold(name, "evalsha") {
		return
	}
	n, ok := args[2].(int)
	if !ok || n == 0 || len(args) < 3+n {
		return
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprint(args[3+i])
	}
	s.mu.Lock()
	s.calls = append(s.calls, keys)
	s.mu.Unlock()
}
