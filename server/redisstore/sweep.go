package redisstore

import (
	"context"
	"fmt"
)

// sweepGroups runs the sweep script on one key group's expiry index
// after another, starting where the previous Sweep stopped, until limit
// records have left the store or every group was swept once. Each script
// touches one group's keys only, as Redis Cluster needs, so it runs on
// the master holding that group's slot. A group whose master fails (down,
// or failing over) does not stop the others: they are swept, and the
// error, naming how many groups failed, comes back with their count.
func (s *Store) sweepGroups(ctx context.Context, limit int) (int, error) {
	start := int(s.sweepCursor.Load())
	total, failed := 0, 0
	var firstErr error
	for i := range KeyGroups {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("redisstore: sweep: %w", err)
		}
		g := (start + i) % KeyGroups
		n, err := s.scripts.sweep.run(ctx, s.client, []string{s.keys.expiriesOf(g)}, limit-total).Int()
		if err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		total += n
		if total >= limit {
			s.sweepCursor.Store(uint32(g)) // the group may hold more
			break
		}
	}
	if failed > 0 {
		return total, fmt.Errorf("redisstore: sweep: %d of %d key groups failed (the others were swept): %w",
			failed, KeyGroups, firstErr)
	}
	return total, nil
}
