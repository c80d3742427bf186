package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ErrUnsafeServer means the Redis server may lose or evict idempotency
// records: it persists nothing, or its maxmemory-policy evicts keys. A
// lost record makes a retry run its request again, so Open refuses such
// a server unless WithAllowVolatile is given. The error names why.
var ErrUnsafeServer = errors.New("redisstore: Redis may lose idempotency records")

// serverConfig is what Open reads of the server's configuration.
type serverConfig struct {
	appendOnly      string // "yes" or "no"
	appendFsync     string // "always", "everysec" or "no"
	save            string // RDB snapshot rules; "" for none
	maxMemory       string // bytes; "0" for no limit
	maxMemoryPolicy string
}

// configAssessment is what the server's configuration means for the
// store: refusals make Open fail (unless WithAllowVolatile), warnings are
// logged.
type configAssessment struct {
	refusals, warnings []string
}

// assessConfig judges c. Every record carries a TTL (PXAT), so the
// volatile-* policies evict records as readily as the allkeys-* ones:
// only noeviction keeps them. With no maxmemory the policy is idle, but
// setting one at run time would arm it, so it is still worth a warning.
func assessConfig(c serverConfig) configAssessment {
	var a configAssessment
	if c.maxMemoryPolicy != "noeviction" {
		msg := fmt.Sprintf("maxmemory-policy is %s: Redis may evict idempotency records, which all carry a TTL "+
			"(so volatile-* policies evict them too), and a retry would then run again; set maxmemory-policy noeviction",
			c.maxMemoryPolicy)
		if c.maxMemory == "0" || c.maxMemory == "" {
			a.warnings = append(a.warnings, msg+" (no maxmemory is set yet)")
		} else {
			a.refusals = append(a.refusals, msg)
		}
	}
	switch {
	case c.appendOnly != "yes" && strings.TrimSpace(c.save) == "":
		a.refusals = append(a.refusals, "Redis persists nothing (appendonly no, save \"\"): a restart forgets every record, "+
			"and every retry runs again; enable appendonly yes (appendfsync always to lose no acknowledged write)")
	case c.appendOnly != "yes":
		a.warnings = append(a.warnings, "Redis persists only RDB snapshots (appendonly no): a restart loses the records "+
			"written since the last snapshot, and their retries run again; enable appendonly yes")
	case c.appendFsync != "always":
		a.warnings = append(a.warnings, fmt.Sprintf("appendfsync is %s: a crash of the host may lose the last "+
			"acknowledged writes; appendfsync always loses none", c.appendFsync))
	}
	return a
}

// readServerConfig reads the settings assessConfig needs, one CONFIG GET
// each (older servers take one pattern at a time).
func readServerConfig(ctx context.Context, client redis.Cmdable) (serverConfig, error) {
	names := []string{"appendonly", "appendfsync", "save", "maxmemory", "maxmemory-policy"}
	values := make(map[string]string, len(names))
	for _, name := range names {
		got, err := client.ConfigGet(ctx, name).Result()
		if err != nil {
			return serverConfig{}, err
		}
		v, ok := got[name]
		if !ok {
			return serverConfig{}, fmt.Errorf("CONFIG GET %s returned nothing", name)
		}
		values[name] = v
	}
	return serverConfig{
		appendOnly:      values["appendonly"],
		appendFsync:     values["appendfsync"],
		save:            values["save"],
		maxMemory:       values["maxmemory"],
		maxMemoryPolicy: values["maxmemory-policy"],
	}, nil
}

// checkServers runs checkServer on every server the store writes to: each
// master of a Redis Cluster (at start; a master added later is not
// checked), each shard of a ring, or the one server. Each reason names
// its server.
func checkServers(ctx context.Context, client redis.UniversalClient, allowVolatile bool, logger *slog.Logger) error {
	var (
		mu   sync.Mutex
		errs []error
	)
	each := func(ctx context.Context, node *redis.Client) error {
		err := checkServer(ctx, node, node.Options().Addr, allowVolatile, logger)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			errs = append(errs, err)
		}
		return nil
	}
	var err error
	switch c := client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, each)
	case *redis.Ring:
		err = c.ForEachShard(ctx, each)
	case *redis.Client:
		err = each(ctx, c)
	default:
		err = checkServer(ctx, client, describe(client), allowVolatile, logger)
	}
	if err != nil {
		return fmt.Errorf("redisstore: checking the servers' configuration: %w", err)
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	if len(errs) == 0 {
		return nil
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// checkServer reads and judges the server's configuration: an unsafe one
// is ErrUnsafeServer, unless allowVolatile, which logs it at Error
// instead. A server that will not say (CONFIG disabled or renamed, as
// managed services do) is logged as unchecked, not refused: the operator
// has to vouch for it.
func checkServer(ctx context.Context, client redis.Cmdable, addr string, allowVolatile bool, logger *slog.Logger) error {
	if err := checkVersion(ctx, client, addr, logger); err != nil {
		return err
	}
	c, err := readServerConfig(ctx, client)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("redisstore: reading the configuration of %s: %w", addr, err)
		}
		logger.Warn("redisstore: cannot read the Redis configuration; persistence and eviction are unchecked: "+
			"make sure Redis persists every write and never evicts (maxmemory-policy noeviction)", "server", addr, "err", err)
		return nil
	}
	a := assessConfig(c)
	for _, w := range a.warnings {
		logger.Warn("redisstore: "+w, "server", addr)
	}
	if len(a.refusals) == 0 {
		return nil
	}
	if allowVolatile {
		for _, r := range a.refusals {
			logger.Error("redisstore: UNSAFE, allowed by the volatile override: "+r, "server", addr)
		}
		return nil
	}
	return fmt.Errorf("%w: %s: %s", ErrUnsafeServer, addr, strings.Join(a.refusals, "; "))
}
