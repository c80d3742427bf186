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

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/saga"
)

// allRunStates are the states `runs list --state` accepts, in life order.
var allRunStates = []saga.State{saga.Running, saga.Compensating, saga.NeedsOperator, saga.Compensated, saga.Completed}

// runsListFlags are the flags of `idem runs list`.
type runsListFlags struct {
	states []string
	json   bool
}

func newRunsListCommand(env *runsEnv) *cobra.Command {
	var f runsListFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the saga runs in the keystore, oldest first",
		Long: `List prints one row per run, oldest first: its id (SCOPE@RUN for a run
stored under a scope), state, how many steps began, how many of them have
an intent (the step's or its compensation's) whose outcome is not proven
(pending, accepted or expired), and when the run's record last changed.

Every scope's runs are listed unless --scope is given. A damaged run is
left out and named on stderr, and the exit status is 1.`,
		Example: `  idem runs list
  idem runs list --state needs_operator,compensating
  idem runs list --scope tenant-a --json | jq -r '.[].id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRunsList(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), env, f)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.states, "state", nil, "only runs in these states (comma-separated: "+joinRunStates(allRunStates)+")")
	fl.BoolVar(&f.json, "json", false, "print a JSON array instead of a table")
	_ = cmd.RegisterFlagCompletionFunc("state", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return strings.Split(joinRunStates(allRunStates), ", "), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// runSummary is one run without its steps: what list prints.
type runSummary struct {
	// ID is the run's id as the program gave it; Scope the scope it is
	// stored under, "" for none.
	ID    string     `json:"id"`
	Scope string     `json:"scope,omitempty"`
	State saga.State `json:"state"`
	// StepCount counts the steps that began; Unsettled those with an
	// intent whose outcome is not proven.
	StepCount int       `json:"step_count"`
	Unsettled int       `json:"unsettled_steps"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func runRunsList(ctx context.Context, out, errOut io.Writer, env *runsEnv, f runsListFlags) (err error) {
	states, err := parseRunStates(f.states)
	if err != nil {
		return err
	}
	sg, client, err := env.openSaga(ctx, env.scope, true)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := client.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing keystore %s: %w", env.ks.display(), cerr)
		}
	}()
	var runs []saga.RunInfo
	var listErr error
	if env.scopeSet {
		runs, listErr = sg.List(ctx)
	} else {
		runs, listErr = sg.ListAll(ctx)
	}
	if listErr != nil && !errors.Is(listErr, keystore.ErrCorrupt) {
		return fmt.Errorf("listing runs in %s: %w", env.ks.display(), listErr)
	}
	rows := make([]runSummary, 0, len(runs))
	for _, r := range runs {
		if len(states) > 0 && !slices.Contains(states, r.State) {
			continue
		}
		row, err := summarizeRun(ctx, client, r)
		if err != nil {
			return fmt.Errorf("reading the intents of run %q in %s: %w", runRef{r.Scope, r.ID}, env.ks.display(), err)
		}
		rows = append(rows, row)
	}
	switch {
	case f.json:
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(rows)
	case len(rows) == 0 && listErr == nil:
		_, err = fmt.Fprintf(out, "no runs in %s match\n", env.ks.display())
	case len(rows) > 0:
		err = writeRunsTable(out, rows, env.now())
	}
	if err != nil {
		return err
	}
	if listErr != nil {
		fmt.Fprintln(errOut, "damaged runs left out: "+errorLine(listErr.Error()))
		return failedf("damaged runs in %s were left out (above); the rest is sound", env.ks.display())
	}
	return nil
}

// summarizeRun is r's row, with its steps' intents read from the
// keystore to count the unsettled ones.
func summarizeRun(ctx context.Context, client *idem.Client, r saga.RunInfo) (runSummary, error) {
	row := runSummary{ID: r.ID, Scope: r.Scope, State: r.State, StepCount: len(r.Steps), CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	for _, st := range r.Steps {
		if st.Kind != "http" {
			continue
		}
		for _, key := range []string{st.Key, st.CompensationKey} {
			s, err := intentStateOf(ctx, client, key)
			if err != nil {
				return row, err
			}
			if unsettled(s) {
				row.Unsettled++
				break
			}
		}
	}
	return row, nil
}

// intentStateOf is the state of the intent with key, "" when there is
// none (a step recorded but never begun, a compensation not begun).
func intentStateOf(ctx context.Context, client *idem.Client, key string) (idem.State, error) {
	if key == "" {
		return "", nil
	}
	in, err := client.Resume(ctx, key)
	if errors.Is(err, keystore.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return in.State, nil
}

func writeRunsTable(out io.Writer, rows []runSummary, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATE\tSTEPS\tUNSETTLED\tUPDATED\tAGE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", runRef{r.Scope, r.ID}, r.State, r.StepCount, r.Unsettled,
			r.UpdatedAt.UTC().Format(time.RFC3339), humanAge(now.Sub(r.CreatedAt)))
	}
	return tw.Flush()
}

// parseRunStates checks --state values; none means every state.
func parseRunStates(values []string) ([]saga.State, error) {
	var out []saga.State
	for _, v := range values {
		s := saga.State(strings.ToLower(strings.TrimSpace(v)))
		if !slices.Contains(allRunStates, s) {
			return nil, fmt.Errorf("--state %q: unknown run state (want %s)", v, joinRunStates(allRunStates))
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

func joinRunStates(states []saga.State) string {
	names := make([]string, len(states))
	for i, s := range states {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}
