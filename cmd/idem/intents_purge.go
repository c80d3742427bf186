package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemkit/idem/keystore"
)

// purgeFlags are the flags of `idem intents purge`.
type purgeFlags struct {
	olderThan time.Duration
	dryRun    bool
}

func newIntentsPurgeCommand(env *intentsEnv) *cobra.Command {
	var f purgeFlags
	cmd := &cobra.Command{
		Use:   "purge --older-than DURATION",
		Short: "Delete finished intents not updated for longer than a cutoff",
		Long: `Purge deletes the finished intents (succeeded, failed, expired, and accepted
ones whose operation was handed back) whose last update is older than
--older-than, and says how many it deleted. Pending intents are never
purged: they still own a key that a resume must reuse.

--dry-run counts what would go without deleting anything.`,
		Example: `  idem intents purge --older-than 24h --dry-run
  idem intents purge --older-than 168h`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPurge(cmd.Context(), cmd.OutOrStdout(), env, f)
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.olderThan, "older-than", 0, "purge intents last updated longer ago than this, e.g. 24h (required)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "count what would be purged, delete nothing")
	_ = cmd.MarkFlagRequired("older-than")
	return cmd
}

func runPurge(ctx context.Context, out io.Writer, env *intentsEnv, f purgeFlags) error {
	if f.olderThan <= 0 {
		return fmt.Errorf("--older-than %s: need a positive duration", f.olderThan)
	}
	st, err := env.ks.open(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	cutoff := env.now().Add(-f.olderThan)
	age := shortDuration(f.olderThan)
	if f.dryRun {
		n, err := countPurgeable(ctx, st, cutoff)
		if err != nil {
			return fmt.Errorf("reading %s: %w", env.ks.display(), err)
		}
		_, err = fmt.Fprintf(out, "would purge %d finished %s not updated for %s from %s (dry run; nothing deleted)\n",
			n, plural(n, "intent", "intents"), age, env.ks.display())
		return err
	}
	n, err := st.Purge(ctx, cutoff)
	if err != nil {
		return fmt.Errorf("purging %s (%d deleted before the error): %w", env.ks.display(), n, err)
	}
	_, err = fmt.Fprintf(out, "purged %d finished %s not updated for %s from %s\n",
		n, plural(n, "intent", "intents"), age, env.ks.display())
	return err
}

// countPurgeable counts what Store.Purge(ctx, cutoff) would delete: final
// records whose last update is before cutoff.
func countPurgeable(ctx context.Context, st keystore.Store, cutoff time.Time) (int, error) {
	recs, err := st.List(ctx, keystore.Filter{})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range recs {
		if r.State.Settled() && r.UpdatedAt.Before(cutoff) {
			n++
		}
	}
	return n, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
