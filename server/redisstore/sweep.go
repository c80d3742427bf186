package redisstore

import (
	"context"
	"fmt"
)

// sweepGroups runs the sweep script on one key group's expiry index
// after another, starting where the previous Sweep stopped, until limit
// records have left the store or every group was swept once. Each script
// touches one group's keys only, as Redis Cluster needs.
func (s *Store) sweepGroups(ctx context.Context, limit int) (int, error) {
	start := int(s.sweepCursor.Load())
	total := 0
	for i := range KeyGroups {
		g := (start + i) % KeyGroups
		n, err := s.scripts.sweep.Run(ctx, s.client, []string{s.keys.expiriesOf(g)}, limit-total).Int()
		if err != nil {
			return total, fmt.Errorf("redisstore: sweep: %w", err)
		}
		total += n
		if total >= limit {
			s.sweepCursor.Store(uint32(g)) // the group may hold more
			return total, nil
		}
	}
	return total, nil
}
