package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrUnsupportedServer means the Redis server is older than 7.0, whose
// SET … NX PXAT GET every reservation is (PXAT came in 6.2, NX with GET
// in 7.0). The error names the server and its version.
var ErrUnsupportedServer = errors.New("redisstore: the Redis server is older than 7.0")

// checkVersion refuses a server older than 7.0. One that will not say
// (INFO disabled or renamed) is logged and used: a reservation on a
// server too old then fails with Redis's syntax error, and nothing is
// written.
func checkVersion(ctx context.Context, client redis.Cmdable, addr string, logger *slog.Logger) error {
	info, err := client.Info(ctx, "server").Result()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("redisstore: reading the version of %s: %w", addr, err)
		}
		logger.Warn("redisstore: cannot read the Redis version; the store needs Redis 7.0 or later", "server", addr, "err", err)
		return nil
	}
	version := infoField(info, "redis_version")
	supported, known := versionSupported(version)
	switch {
	case !known:
		logger.Warn("redisstore: cannot read the Redis version; the store needs Redis 7.0 or later", "server", addr, "version", version)
	case !supported:
		return fmt.Errorf("%w: %s runs Redis %s", ErrUnsupportedServer, addr, version)
	}
	return nil
}

// infoField returns the value of name in an INFO reply, or "".
func infoField(info, name string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// versionSupported says whether a redis_version is 7.0 or later, and
// whether it could be read at all.
func versionSupported(version string) (supported, known bool) {
	major, _, _ := strings.Cut(version, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return false, false
	}
	return n >= 7, true
}
