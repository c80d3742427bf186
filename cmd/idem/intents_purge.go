package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemkit/idem/keystore"
)

// defaultPurgeRetention is the server's key retention that --retention
// assumes, the same default as resume's.
const defaultPurgeRetention = 24 * time.Hour

// purgeFlags are the flags of `idem intents purge`.
type purgeFlags struct {
	olderThan, retention time.Duration
	force, dryRun, json  bool
}

func newIntentsPurgeCommand(env *intentsEnv) *cobra.Command {
	var f purgeFlags
	cmd := &cobra.Command{
		Use:   "purge --older-than DURATION",
		Short: "Delete settled intents not updated for longer than a cutoff",
		Long: `Purge removes the settled intents (succeeded, failed) whose last update is
older than --older-than, and says how many it deleted, how many it kept as
tombstones, and how many it kept because their outcome is not settled.
Pending intents are never purged: they still own a key that a resume must
reuse; nor are accepted ones, whose operation the client still polls.
Expired intents are kept too, and failed ones whose operation was gone (as
earlier builds stored them): their outcome is unknown (the key may have
been sent, and the server may have forgotten it), so deleting one lets a
re-run of its name pay again. Settle them first (idem intents settle), or
give --force to purge them anyway.

A name must stay bound to its key while the server remembers the key
(--retention, default 24h): a re-run of the same batch would otherwise
begin the same names under new keys and pay again. So an --older-than
shorter than --retention is refused unless --force is given; then a named
intent younger than the retention is kept as a tombstone (key, name,
fingerprint, state, times, request line and answer status and headers; no
bodies), so a re-run gets its key back, and deleted once the retention has
passed. Older intents, and tombstones past the retention, are deleted.

--dry-run counts what would go without changing anything.`,
		Example: `  idem intents purge --older-than 24h --dry-run
  idem intents purge --older-than 168h
  idem intents purge --older-than 1h --force --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPurge(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), env, f)
		},
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.olderThan, "older-than", 0, "purge intents last updated longer ago than this, e.g. 24h (required)")
	fl.DurationVar(&f.retention, "retention", defaultPurgeRetention, "how long the server remembers a key; younger named intents are kept as tombstones")
	fl.BoolVar(&f.force, "force", false, "purge even when --older-than is shorter than --retention (young intents become tombstones), and purge expired intents, whose outcome is unknown")
	fl.BoolVar(&f.dryRun, "dry-run", false, "count what would be purged, change nothing")
	fl.BoolVar(&f.json, "json", false, "print the counts as a JSON object")
	_ = cmd.MarkFlagRequired("older-than")
	return cmd
}

// check validates the flags before anything is opened.
func (f purgeFlags) check() error {
	if f.olderThan <= 0 {
		return fmt.Errorf("--older-than %s: need a positive duration", f.olderThan)
	}
	if f.retention <= 0 {
		return fmt.Errorf("--retention %s: need a positive duration", f.retention)
	}
	if f.olderThan < f.retention && !f.force {
		return fmt.Errorf("--older-than %s is shorter than --retention %s, and the server still remembers keys that young: "+
			"names stay bound to their keys as tombstones until the retention has passed; without them a re-run would pay again. "+
			"Give --force to purge anyway (young intents become tombstones, without their bodies)",
			shortDuration(f.olderThan), shortDuration(f.retention))
	}
	return nil
}

// purgeReport is what purge prints with --json.
type purgeReport struct {
	Keystore  string `json:"keystore"`
	OlderThan string `json:"older_than"`
	Retention string `json:"retention"`
	DryRun    bool   `json:"dry_run"`
	keystore.PurgeResult
	purgeKept
}

// purgeKept counts the intents old enough to purge that a purge keeps
// because their outcome is not settled.
type purgeKept struct {
	// Unsettled are pending and accepted intents: never purged.
	Unsettled int `json:"kept_unsettled"`
	// Unknown are expired intents, and failed ones whose operation was
	// gone (as earlier builds stored them): purged only with --force.
	Unknown int `json:"kept_unknown"`
}

// runPurge purges and reports; damaged records, which a purge leaves
// alone, are named on errOut with exit status 1.
func runPurge(ctx context.Context, out, errOut io.Writer, env *intentsEnv, f purgeFlags) (err error) {
	if err := f.check(); err != nil {
		return err
	}
	st, err := env.ks.open(ctx)
	if err != nil {
		return err
	}
	defer env.ks.closeStore(st, &err)
	now := env.now()
	req := keystore.PurgeRequest{OlderThan: now.Add(-f.olderThan), KeepNamesAfter: now.Add(-f.retention), IncludeUnknown: f.force}
	kept, err := countKept(ctx, st, req)
	if err != nil {
		return fmt.Errorf("reading %s: %w", env.ks.display(), err)
	}
	var res keystore.PurgeResult
	if f.dryRun {
		res, err = countPurge(ctx, st, req)
	} else {
		res, err = st.Purge(ctx, req)
	}
	var damaged *keystore.CorruptRecordsError
	if err != nil && !errors.As(err, &damaged) {
		return failedf("purging %s (%d deleted, %d tombstoned before the error): %w",
			env.ks.display(), res.Deleted, res.Tombstoned, err)
	}
	if werr := writePurge(out, env, f, res, kept); werr != nil {
		return werr
	}
	return reportDamaged(ctx, errOut, st, env.ks.display(), err)
}

// writePurge prints what a purge did (or would do).
func writePurge(out io.Writer, env *intentsEnv, f purgeFlags, res keystore.PurgeResult, kept purgeKept) error {
	rep := purgeReport{Keystore: env.ks.display(), OlderThan: shortDuration(f.olderThan),
		Retention: shortDuration(f.retention), DryRun: f.dryRun, PurgeResult: res, purgeKept: kept}
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writePurgeReport(out, rep)
}

func writePurgeReport(out io.Writer, rep purgeReport) error {
	verb, tail := "purged", ""
	if rep.DryRun {
		verb, tail = "would purge", " (dry run; nothing changed)"
	}
	_, err := fmt.Fprintf(out, "%s settled intents not updated for %s from %s: %d deleted, %d tombstoned%s\n",
		verb, rep.OlderThan, rep.Keystore, rep.Deleted, rep.Tombstoned, tail)
	if err == nil && rep.Tombstoned > 0 {
		_, err = fmt.Fprintf(out, "tombstones keep their names bound to their keys until %s after creation, so a re-run gets the same keys\n",
			rep.Retention)
	}
	if err == nil {
		err = writeKept(out, rep.purgeKept)
	}
	return err
}

// writeKept says how many intents old enough to purge were kept because
// their outcome is not settled, and why; nothing when there are none.
func writeKept(out io.Writer, k purgeKept) error {
	n := k.Unsettled + k.Unknown
	if n == 0 {
		return nil
	}
	var why []string
	if k.Unsettled > 0 {
		why = append(why, fmt.Sprintf("%d pending or accepted: unsettled, never purged; resume or settle %s", k.Unsettled,
			plural(k.Unsettled, "it", "them")))
	}
	if k.Unknown > 0 {
		why = append(why, fmt.Sprintf("%d expired or with its operation gone, outcome unknown: the key may have been sent and forgotten by the server, "+
			"so without the record a re-run would pay again; settle %s first (idem intents settle), or give --force",
			k.Unknown, plural(k.Unknown, "it", "them")))
	}
	_, err := fmt.Fprintf(out, "kept %d %s whose outcome is not settled (%s)\n",
		n, plural(n, "intent", "intents"), strings.Join(why, "; "))
	return err
}

// countKept counts the intents req keeps only because their outcome is
// not settled: pending and accepted ones last updated before the cutoff,
// and the expired ones (and failed ones whose operation was gone) a purge
// that included them would remove. Damaged
// records are left to the purge to name.
func countKept(ctx context.Context, st keystore.Store, req keystore.PurgeRequest) (purgeKept, error) {
	var k purgeKept
	recs, err := st.List(ctx, keystore.Filter{States: []keystore.State{keystore.Pending, keystore.Accepted, keystore.Expired, keystore.Failed}})
	var damaged *keystore.CorruptRecordsError
	if err != nil && !errors.As(err, &damaged) {
		return k, err
	}
	all := req
	all.IncludeUnknown = true
	for _, r := range recs {
		switch {
		case !r.State.Final() || r.State == keystore.Accepted:
			if r.UpdatedAt.Before(req.OlderThan) {
				k.Unsettled++
			}
		case req.Action(r) == keystore.PurgeKeep && all.Action(r) != keystore.PurgeKeep:
			k.Unknown++
		}
	}
	return k, nil
}

// countPurge counts what Store.Purge(ctx, req) would do, and returns the
// list's *CorruptRecordsError, if any, with the counts: a purge leaves
// damaged records alone.
func countPurge(ctx context.Context, st keystore.Store, req keystore.PurgeRequest) (keystore.PurgeResult, error) {
	var res keystore.PurgeResult
	recs, err := st.List(ctx, keystore.Filter{})
	var damaged *keystore.CorruptRecordsError
	if err != nil && !errors.As(err, &damaged) {
		return res, err
	}
	for _, r := range recs {
		switch req.Action(r) {
		case keystore.PurgeDelete:
			res.Deleted++
		case keystore.PurgeTombstone:
			res.Tombstoned++
		}
	}
	return res, err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
