package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/saga"
)

// runsResolveFlags are the flags of `idem runs resolve`.
type runsResolveFlags struct {
	succeeded, failed bool
	by, note          string
	json              bool
}

func newRunsResolveCommand(env *runsEnv) *cobra.Command {
	var f runsResolveFlags
	cmd := &cobra.Command{
		Use:   "resolve RUN STEP (--succeeded|--failed) --by NAME [--note TEXT]",
		Short: "Record a person's verdict on a step left unknown or a compensation that could not be proven",
		Long: `Resolve records what a person found out where the run cannot prove an
outcome by itself. Nothing is sent. What the verdict is about depends on the
step:

  - The step's own outcome is unknown (its intent pending, accepted or
    expired): --succeeded or --failed says what the step did at the
    provider. Its intent is settled with that verdict, as idem intents
    settle does; the program, when it runs again, goes on from it (a
    failed run then undoes a step that succeeded).
  - The run is compensating or needs an operator, and the step's outcome
    is known: the verdict is on its undoing. --succeeded says the step is
    undone (its compensation took effect, it was undone by hand, or there
    was nothing to undo): an unsettled compensation intent is settled as
    succeeded, so nothing resends it, and the step is recorded as undone
    (saga.Saga.ResolveStep); the program's Fail goes on with the steps
    before it. --failed says a compensation whose outcome was unknown did
    not take effect: its intent is settled as failed, and the run needs an
    operator until the step is undone by hand and resolved with
    --succeeded.

--by (who decides) is required, and kept in the record with --note (the
evidence). A completed or compensated run, a step already undone, or a
verdict with nothing to record is refused (exit status 1).`,
		Example: `  idem runs resolve order-42 charge --succeeded --by alice --note "pay_123 in the provider dashboard"
  idem runs resolve tenant-a@order-42 charge --succeeded --by alice --note "refunded by hand, ticket OPS-9"`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRunsResolve(cmd.Context(), cmd.OutOrStdout(), env, args[0], args[1], f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.succeeded, "succeeded", false, "the step took effect (unknown step), or the step is undone (its compensation)")
	fl.BoolVar(&f.failed, "failed", false, "the step did not take effect (unknown step), or its compensation did not")
	fl.StringVar(&f.by, "by", "", "who decides: a user, a ticket (required)")
	fl.StringVar(&f.note, "note", "", "the evidence the verdict rests on")
	fl.BoolVar(&f.json, "json", false, "print the run afterwards as show --json does")
	return cmd
}

// outcome returns the verdict the flags give, after checking them.
func (f runsResolveFlags) outcome() (idem.Outcome, error) {
	switch {
	case f.succeeded == f.failed:
		return idem.OutcomeUnknown, errors.New("give exactly one of --succeeded and --failed")
	case strings.TrimSpace(f.by) == "":
		return idem.OutcomeUnknown, errors.New("--by is required: the run's record says who decided")
	case f.succeeded:
		return idem.OutcomeSucceeded, nil
	default:
		return idem.OutcomeFailed, nil
	}
}

func runRunsResolve(ctx context.Context, out io.Writer, env *runsEnv, arg, step string, f runsResolveFlags) (err error) {
	o, err := f.outcome()
	if err != nil {
		return err
	}
	ref, err := env.parseRun(arg)
	if err != nil {
		return err
	}
	if strings.TrimSpace(step) == "" {
		return errors.New("empty step name")
	}
	sg, client, err := env.openSaga(ctx, ref.scope, false)
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
	done, err := resolveStep(ctx, sg, client, ref, info, step, o, f)
	if err != nil {
		return err
	}
	if info, err = env.showRun(ctx, sg, ref); err != nil {
		return err
	}
	d := describeRun(info)
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	}
	fmt.Fprintln(out, done)
	fmt.Fprintf(out, "run %s is %s\n", ref, d.State)
	for _, line := range d.Todo {
		fmt.Fprintln(out, "  - "+line)
	}
	return nil
}

// resolveStep records the verdict o on step and says, in one line, what
// it recorded.
func resolveStep(ctx context.Context, sg *saga.Saga, client *idem.Client, ref runRef, info saga.RunInfo, step string, o idem.Outcome, f runsResolveFlags) (string, error) {
	if info.State.Final() {
		return "", failedf("run %s is %s: nothing is left to resolve", ref, info.State)
	}
	var st *saga.StepInfo
	var names []string
	for i := range info.Steps {
		names = append(names, info.Steps[i].Name)
		if info.Steps[i].Name == step {
			st = &info.Steps[i]
		}
	}
	if st == nil {
		return "", failedf("run %s has no step %q (its steps: %s)", ref, step, dash(strings.Join(names, ", ")))
	}
	verdict := "succeeded"
	if o == idem.OutcomeFailed {
		verdict = "failed"
	}
	note := strings.TrimSpace(f.note)
	if note == "" {
		note = "--" + verdict + ", given with idem runs resolve"
	}
	settle := func(key, what string) error {
		_, err := client.Settle(ctx, key, idem.Settlement{Outcome: o, By: f.by, Note: note})
		switch {
		case errors.Is(err, idem.ErrIntentBusy):
			return failedf("the %s of run %s is held by another live worker, which may have an attempt in flight; wait for it to finish, then resolve again", what, ref)
		case errors.Is(err, idem.ErrNotReconcilable):
			return failedf("the %s of run %s was settled meanwhile; see idem runs show %s", what, ref, ref)
		}
		return err
	}
	if st.Kind == "http" && unsettled(st.IntentState) {
		if err := settle(st.Key, "step "+step); err != nil {
			return "", err
		}
		return fmt.Sprintf("settled step %s of run %s as %s (by %s: %s)", step, ref, verdict, f.by, note), nil
	}
	switch {
	case st.Compensated:
		return "", failedf("step %s of run %s is undone already (%s); a verdict is never replaced", step, ref, st.Resolution)
	case info.State == saga.Running:
		return "", failedf("step %s of run %s has a known outcome (%s) and the run is running: nothing to resolve; the program goes on with the run",
			step, ref, dash(string(st.IntentState)))
	}
	compUnsettled := st.Kind == "http" && unsettled(st.CompensationState)
	if o == idem.OutcomeFailed {
		if !compUnsettled {
			return "", failedf("--failed on step %s of run %s records nothing: its own outcome is known and no compensation of it is unsettled; "+
				"undo the step by hand, then resolve it with --succeeded", step, ref)
		}
		if err := settle(st.CompensationKey, "compensation of step "+step); err != nil {
			return "", err
		}
		return fmt.Sprintf("settled the compensation of step %s of run %s as failed (by %s: %s); undo the step by hand, then resolve it with --succeeded",
			step, ref, f.by, note), nil
	}
	if compUnsettled {
		if err := settle(st.CompensationKey, "compensation of step "+step); err != nil {
			return "", err
		}
	}
	err := sg.ResolveStep(ctx, ref.id, step, saga.Resolution{By: f.by, Note: note})
	var stateErr *saga.RunStateError
	switch {
	case errors.As(err, &stateErr):
		return "", failed(err)
	case errors.Is(err, saga.ErrRunChanged):
		return "", failedf("run %s was changed by its program while the verdict was written; nothing was recorded in the run: resolve again", ref)
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("recorded step %s of run %s as undone (by %s: %s)", step, ref, f.by, note), nil
}
