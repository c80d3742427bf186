package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemkit/idem/keystore"
)

// allStates are the states --state accepts, in life order.
var allStates = []keystore.State{keystore.Pending, keystore.Accepted, keystore.Succeeded, keystore.Failed, keystore.Expired}

// listFlags are the flags of `idem intents list`.
type listFlags struct {
	states    []string
	olderThan time.Duration
	json      bool
}

func newIntentsListCommand(env *intentsEnv) *cobra.Command {
	var f listFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the intents in the keystore, oldest first",
		Long: `List prints one row per intent, oldest first: its idempotency key, business
name, state, request method and URL, the attempts made over its life, its
age, and the stored answer's status or the last error. Bodies are never
printed here; use show.

A damaged record (one that fails its checksum) is left out of the rows and
named on stderr, "damaged record KEYREF: why", and the exit status is 1.`,
		Example: `  idem intents list
  idem intents list --state pending,accepted --older-than 1h
  idem intents list --json | jq '.[].key'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runList(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), env, f)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.states, "state", nil, "only intents in these states (comma-separated: "+joinStates(allStates)+")")
	fl.DurationVar(&f.olderThan, "older-than", 0, "only intents created longer ago than this, e.g. 1h")
	fl.BoolVar(&f.json, "json", false, "print a JSON array instead of a table")
	_ = cmd.RegisterFlagCompletionFunc("state", completeStates)
	return cmd
}

// filter turns the flags into a keystore filter.
func (f listFlags) filter(now time.Time) (keystore.Filter, error) {
	var filter keystore.Filter
	states, err := parseStates(f.states)
	if err != nil {
		return filter, err
	}
	filter.States = states
	if f.olderThan < 0 {
		return filter, fmt.Errorf("--older-than %s: need a positive duration", f.olderThan)
	}
	if f.olderThan > 0 {
		filter.CreatedBefore = now.Add(-f.olderThan)
	}
	return filter, nil
}

// runList prints the intents; damaged records, left out by the store, are
// named on errOut after the listing, with exit status 1.
func runList(ctx context.Context, out, errOut io.Writer, env *intentsEnv, f listFlags) (err error) {
	filter, err := f.filter(env.now())
	if err != nil {
		return err
	}
	st, err := env.ks.openReadOnly(ctx)
	if err != nil {
		return err
	}
	defer env.ks.closeStore(st, &err)
	recs, listErr := st.List(ctx, filter)
	var damaged *keystore.CorruptRecordsError
	if listErr != nil && !errors.As(listErr, &damaged) {
		return fmt.Errorf("listing intents in %s: %w", env.ks.display(), listErr)
	}
	switch {
	case f.json:
		err = writeListJSON(out, recs)
	case len(recs) == 0 && damaged == nil:
		_, err = fmt.Fprintf(out, "no intents in %s match\n", env.ks.display())
	case len(recs) > 0:
		err = writeListTable(out, recs, env.now())
	}
	if err != nil {
		return err
	}
	return reportDamaged(ctx, errOut, st, env.ks.display(), listErr)
}

func writeListJSON(out io.Writer, recs []*keystore.Record) error {
	rows := make([]intentSummary, len(recs))
	for i, r := range recs {
		rows[i] = summarize(r)
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(rows)
}

// lastColumnWidth bounds the LAST column so one long error cannot push
// the table off the screen; show prints it whole.
const lastColumnWidth = 60

func writeListTable(out io.Writer, recs []*keystore.Record, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tNAME\tPRINCIPAL\tSTATE\tMETHOD\tURL\tATTEMPTS\tAGE\tLAST")
	for _, r := range recs {
		name := keystore.BusinessName(r.Name, r.Principal)
		if name == "" {
			name = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n",
			r.Key, oneLineOf(name, 48), principalColumn(r), r.State, r.Method, oneLineOf(r.URL, 80), r.Attempts,
			humanAge(now.Sub(r.CreatedAt)), lastOutcome(r))
	}
	return tw.Flush()
}

// lastOutcome is the verdict that settled r, or the stored answer's
// status, or else the last error (a tombstone: its state, purged); for an unsettled intent whose attempts
// may have taken effect it says so first, on top of the column's width
// (the error after it is what says why).
func lastOutcome(r *keystore.Record) string {
	if !r.Purged.IsZero() {
		// A tombstone kept only what binds its name to its key.
		return string(r.State) + " (purged)"
	}
	s := lastAnswer(r)
	if r.MayHaveExecuted && (!r.State.Settled() || r.State == keystore.Expired) {
		if s == "-" {
			return "may have executed"
		}
		return "may have executed; " + s
	}
	return s
}

func lastAnswer(r *keystore.Record) string {
	if v, ok := settledBy(r); ok {
		return oneLineOf("reconciled: "+verdictText(v), lastColumnWidth)
	}
	switch {
	case r.Response != nil:
		return statusText(r.Response.Status)
	case r.LastError != "":
		// The package prefix says nothing in a column of idem errors.
		return oneLineOf(strings.TrimPrefix(r.LastError, "idem: "), lastColumnWidth)
	default:
		return "-"
	}
}

// parseStates checks --state values; none means every state.
func parseStates(values []string) ([]keystore.State, error) {
	var out []keystore.State
	for _, v := range values {
		s := keystore.State(strings.ToLower(strings.TrimSpace(v)))
		if !slices.Contains(allStates, s) {
			return nil, fmt.Errorf("--state %q: unknown state (want %s)", v, joinStates(allStates))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

func joinStates(states []keystore.State) string {
	names := make([]string, len(states))
	for i, s := range states {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// completeStates offers the state names for shell completion of --state.
func completeStates(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	names := make([]string, len(allStates))
	for i, s := range allStates {
		names[i] = string(s)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// principalColumn is the PRINCIPAL column: the first 8 digits of the
// principal's fingerprint; "none" for a named intent without one (begun
// without credentials, or stored by a build before names were scoped by
// principal: a Begin with credentials refuses it until it is adopted,
// see idem intents adopt); "-" for an unnamed anonymous one.
func principalColumn(r *keystore.Record) string {
	switch {
	case r.Principal != "":
		return r.Principal[:min(8, len(r.Principal))]
	case r.Name != "":
		return "none"
	}
	return "-"
}
