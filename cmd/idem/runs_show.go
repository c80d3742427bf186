package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/saga"
)

// runsShowFlags are the flags of `idem runs show`.
type runsShowFlags struct {
	json bool
}

func newRunsShowCommand(env *runsEnv) *cobra.Command {
	var f runsShowFlags
	cmd := &cobra.Command{
		Use:   "show RUN",
		Short: "Show one saga run: its state, each step's intents, and what an operator must do",
		Long: `Show prints one run: its state, cause and problem, and each step that
began, in order: its name, kind (http, or local for a step of the program's
own code), its intent's key and state, its compensation's key and state,
and whether it is undone (and how). Then it says what is left to do, and
by whom: the program (it goes on with the run when it runs again), idem
runs resume (an intent whose answer was lost), or a person (idem runs
resolve, for an outcome no resend can prove).

The keys are the intents' idempotency keys, shown as idem intents shows
them; idem intents show KEY prints an intent in full. Nothing is written.`,
		Example: `  idem runs show order-42
  idem runs show tenant-a@order-42 --json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRunsShow(cmd.Context(), cmd.OutOrStdout(), env, args[0], f)
		},
	}
	cmd.Flags().BoolVar(&f.json, "json", false, "print the run as a JSON object")
	return cmd
}

// runDetail is one run in full: what show prints.
type runDetail struct {
	runSummary
	Version uint64 `json:"version"`
	// Cause is what the program failed the run with; Problem why it needs
	// an operator.
	Cause   string       `json:"cause,omitempty"`
	Problem string       `json:"problem,omitempty"`
	Steps   []stepDetail `json:"steps"`
	// Todo says what is left to do and by whom, one line each; empty for
	// a final run.
	Todo []string `json:"todo"`
}

// stepDetail is one step of a run.
type stepDetail struct {
	Name string `json:"name"`
	// Kind is "http" or "local".
	Kind        string     `json:"kind"`
	Key         string     `json:"key,omitempty"`
	IntentState idem.State `json:"intent_state,omitempty"`
	// Compensation is set when the step was given one.
	Compensation *compensationDetail `json:"compensation,omitempty"`
	// Undone is set once nothing is left to undo for the step;
	// Resolution says how.
	Undone     bool   `json:"undone"`
	Resolution string `json:"resolution,omitempty"`
}

// compensationDetail is a step's compensation: its key, and its intent's
// state ("" while it has not begun).
type compensationDetail struct {
	Key   string     `json:"key,omitempty"`
	State idem.State `json:"state,omitempty"`
}

func runRunsShow(ctx context.Context, out io.Writer, env *runsEnv, arg string, f runsShowFlags) (err error) {
	ref, err := env.parseRun(arg)
	if err != nil {
		return err
	}
	sg, client, err := env.openSaga(ctx, ref.scope, true)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := client.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing keystore %s: %w", env.ks.display(), cerr)
		}
	}()
	info, err := env.showRun(ctx, sg, ref)
	if err != nil {
		return err
	}
	d := describeRun(info)
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	return writeRunDetail(out, d, env.now())
}

// describeRun turns what the saga says of a run into what show prints.
func describeRun(info saga.RunInfo) runDetail {
	d := runDetail{
		runSummary: runSummary{ID: info.ID, Scope: info.Scope, State: info.State, StepCount: len(info.Steps),
			Unsettled: unsettledSteps(info), CreatedAt: info.CreatedAt, UpdatedAt: info.UpdatedAt},
		Version: info.Version, Cause: shownText(info.Cause), Problem: shownText(info.Problem),
		Steps: []stepDetail{}, Todo: todo(info),
	}
	for _, st := range info.Steps {
		sd := stepDetail{Name: st.Name, Kind: st.Kind, Key: st.Key, IntentState: st.IntentState,
			Undone: st.Compensated, Resolution: shownText(st.Resolution)}
		if st.HasCompensation {
			sd.Compensation = &compensationDetail{Key: st.CompensationKey, State: st.CompensationState}
			if st.Kind != "http" {
				sd.Compensation.Key = "" // a local step's compensation is the program's code
			}
		}
		d.Steps = append(d.Steps, sd)
	}
	return d
}

// todo says what is left to do for the run, and by whom: nothing for a
// final run; else one line per step an operator or a resume must see
// to, and the program's part.
func todo(info saga.RunInfo) []string {
	out := []string{}
	if info.State.Final() {
		return out
	}
	ref := runRef{info.Scope, info.ID}.String()
	resolveCmd := func(step, verdict string) string {
		return fmt.Sprintf("`idem runs resolve %s %s %s --by NAME --note EVIDENCE`", ref, step, verdict)
	}
	blocked := false
	for _, st := range info.Steps {
		switch {
		case st.IntentState == idem.Pending || st.IntentState == idem.Accepted:
			blocked = true
			out = append(out, fmt.Sprintf("step %s: its outcome is unknown (intent %s): `idem runs resume %s` resends it with its key; "+
				"if the provider still gives no answer, look the effect up there and record it with %s", st.Name, st.IntentState, ref, resolveCmd(st.Name, "--succeeded|--failed")))
		case st.IntentState == idem.Expired:
			blocked = true
			out = append(out, fmt.Sprintf("step %s: its intent expired unsettled, past the provider's key retention, and is never resent: "+
				"look the effect up at the provider and record it with %s", st.Name, resolveCmd(st.Name, "--succeeded|--failed")))
		case st.Compensated:
		case st.CompensationState == idem.Pending || st.CompensationState == idem.Accepted:
			blocked = true
			out = append(out, fmt.Sprintf("step %s: the outcome of its compensation is unknown (intent %s): `idem runs resume %s` resends it with its key; "+
				"if the provider still gives no answer, look it up there and record it with %s", st.Name, st.CompensationState, ref, resolveCmd(st.Name, "--succeeded|--failed")))
		case st.CompensationState == idem.Failed || st.CompensationState == idem.Expired:
			blocked = true
			out = append(out, fmt.Sprintf("step %s: its compensation cannot be proven (intent %s): undo the step by hand at the provider, then record it with %s",
				st.Name, st.CompensationState, resolveCmd(st.Name, "--succeeded")))
		}
	}
	switch {
	case info.State == saga.NeedsOperator && !blocked:
		out = append(out, "the run needs an operator: "+oneLineOf(shownText(info.Problem), 300))
	case info.State == saga.NeedsOperator:
		out = append(out, "once every verdict above is recorded, the program's Fail goes on undoing the run when it runs again (Saga.Run with the same id, its steps replayed, then Fail)")
	case info.State == saga.Running:
		out = append(out, "the program goes on with the run when it runs again (Saga.Run with the same id): it replays the settled steps and completes or fails the run")
	default:
		out = append(out, "the program's Fail goes on undoing the run when it runs again (Saga.Run with the same id, its steps replayed, then Fail)")
	}
	return out
}

func writeRunDetail(out io.Writer, d runDetail, now time.Time) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	field := func(label, value string) {
		if value != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", label, value)
		}
	}
	field("Run", d.ID)
	field("Scope", d.Scope)
	field("State", string(d.State))
	field("Cause", oneLineOf(d.Cause, 1<<10))
	field("Problem", oneLineOf(d.Problem, 1<<10))
	field("Created", fmt.Sprintf("%s (%s ago)", d.CreatedAt.UTC().Format(time.RFC3339), humanAge(now.Sub(d.CreatedAt))))
	field("Updated", d.UpdatedAt.UTC().Format(time.RFC3339))
	field("Version", fmt.Sprint(d.Version))
	if err := tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("\nSteps\n")
	if len(d.Steps) == 0 {
		b.WriteString("  none began\n")
	}
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  STEP\tKIND\tKEY\tSTATE\tCOMPENSATION KEY\tCOMPENSATION\tUNDONE")
	for _, s := range d.Steps {
		key, state := dash(s.Key), dash(string(s.IntentState))
		if s.Kind != "http" {
			key, state = "-", "done"
		} else if s.IntentState == "" {
			state = "never sent"
		}
		ckey, cstate := "-", "none"
		if c := s.Compensation; c != nil {
			ckey, cstate = dash(c.Key), dash(string(c.State))
			if c.State == "" {
				cstate = "not begun"
			}
		}
		undone := "no"
		if s.Undone {
			undone = "yes: " + oneLineOf(s.Resolution, 80)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Kind, key, state, ckey, cstate, undone)
	}
	if len(d.Steps) > 0 {
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	b.WriteString("\nTo do\n")
	if len(d.Todo) == 0 {
		fmt.Fprintf(&b, "  nothing: the run is %s\n", d.State)
	}
	for _, line := range d.Todo {
		fmt.Fprintf(&b, "  - %s\n", line)
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// dash is s, or "-" for nothing.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
