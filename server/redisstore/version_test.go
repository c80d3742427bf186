package redisstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestVersionSupported(t *testing.T) {
	t.Parallel()
	for version, want := range map[string][2]bool{
		"7.0.15": {true, true}, "7.2.4": {true, true}, "8.0.0": {true, true}, "10.1.0": {true, true},
		"6.2.14": {false, true}, "5.0.7": {false, true}, "": {false, false}, "x.y": {false, false},
	} {
		supported, known := versionSupported(version)
		assert.Equal(t, want, [2]bool{supported, known}, version)
	}
	assert.Equal(t, "7.0.15", infoField("# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\n", "redis_version"))
	assert.Empty(t, infoField("# Server\r\n", "redis_version"))
}
