package testenv

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The slots Redis documents (CLUSTER KEYSLOT on a cluster node).
func TestRedisKeySlotMatchesRedis(t *testing.T) {
	t.Parallel()
	assert.Equal(t, uint16(0x31C3), crc16("123456789"), "the CRC-16/XMODEM check value")
	assert.Equal(t, 12182, RedisKeySlot("foo"))
	assert.Equal(t, 5061, RedisKeySlot("bar"))
	assert.Equal(t, RedisKeySlot("user1000"), RedisKeySlot("{user1000}.following"))
	assert.Equal(t, RedisKeySlot("{user1000}.following"), RedisKeySlot("{user1000}.followers"))
	assert.Equal(t, RedisKeySlot("foo{}{bar}"), RedisKeySlot("foo{}{bar}"), "an empty tag hashes the whole key")
	assert.NotEqual(t, RedisKeySlot("bar"), RedisKeySlot("foo{}{bar}"))
	assert.Equal(t, RedisKeySlot("{bar"), int(crc16("{bar"))%RedisClusterSlots, "an unclosed tag hashes the whole key")
	assert.Equal(t, RedisKeySlot("zap"), RedisKeySlot("foo{zap}{bar}"), "the first tag counts")
}
