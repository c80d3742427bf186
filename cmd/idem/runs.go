package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/saga"
)

// runsEnv is what every runs subcommand shares: the keystore flags, the
// scope runs are stored under, and the clock.
type runsEnv struct {
	intentsEnv
	// scope is --scope; scopeSet says it was given (list then keeps to
	// it).
	scope    string
	scopeSet bool
}

// newRunsCommand returns `idem runs`: list, show, resume and resolve the
// saga runs (package saga) in a client keystore.
func newRunsCommand(getenv func(string) string) *cobra.Command {
	env := &runsEnv{intentsEnv: intentsEnv{getenv: getenv, now: time.Now}}
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show, resume and resolve the saga runs in a client keystore",
		Long: `Runs works on the saga runs (package saga) a program keeps in its keystore:
each run's decision record (running, completed, compensating, compensated,
needs_operator) and the intents of its steps and compensations.

The keystore flags are those of ` + "`idem intents`" + `. A run the program stored
under a scope (saga.WithScope) is named with --scope, or as SCOPE@RUN, the
way list prints it; list shows the runs of every scope unless --scope is
given.

The program owns its runs: these commands never decide a new step, never
start a compensation the program has not begun, and never complete or
fail a run. Resume resends what the program already began; resolve
records a person's verdict where no resend can tell.`,
		Example: `  idem runs list --state needs_operator
  idem runs show order-42
  idem runs resume order-42 --token "$API_TOKEN"
  idem runs resolve tenant-a@order-42 charge --succeeded --by alice --note "refunded by hand, ticket OPS-9"`,
		Args: unknownSubcommand,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	env.ks.register(cmd.PersistentFlags(), getenv)
	cmd.PersistentFlags().StringVar(&env.scope, "scope", "", "the scope the runs are stored under (saga.WithScope); list: only this scope's runs")
	cmd.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		env.scopeSet = cmd.Flags().Changed("scope")
	}
	cmd.AddCommand(
		newRunsListCommand(env),
		newRunsShowCommand(env),
		newRunsResumeCommand(env),
		newRunsResolveCommand(env),
	)
	return cmd
}

// runRef names one run: its scope and its id.
type runRef struct {
	scope, id string
}

// String is the run as list prints it: SCOPE@RUN, or RUN without a
// scope.
func (r runRef) String() string {
	if r.scope == "" {
		return r.id
	}
	return r.scope + "@" + r.id
}

// parseRun reads a RUN argument: RUN, or SCOPE@RUN as list prints it;
// --scope gives the scope of a plain RUN and must agree with one written
// in the argument.
func (env *runsEnv) parseRun(arg string) (runRef, error) {
	arg = strings.TrimSpace(arg)
	ref := runRef{scope: env.scope, id: arg}
	if scope, id, ok := strings.Cut(arg, "@"); ok {
		if env.scopeSet && scope != env.scope {
			return ref, fmt.Errorf("run %q names scope %q, and --scope says %q; give one", arg, scope, env.scope)
		}
		ref = runRef{scope: scope, id: id}
	}
	if ref.id == "" {
		return ref, errors.New("empty run id")
	}
	return ref, nil
}

// openSaga opens the keystore (read-only for the commands that only
// read), a client on it and a Saga of scope. Close the client when done:
// it closes the keystore.
func (env *runsEnv) openSaga(ctx context.Context, scope string, readOnly bool) (*saga.Saga, *idem.Client, error) {
	st, err := env.ks.openMode(ctx, readOnly)
	if err != nil {
		return nil, nil, err
	}
	client, err := idem.New(idem.WithStore(st))
	if err != nil {
		_ = st.Close()
		return nil, nil, err
	}
	sg, err := newScopedSaga(client, scope)
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	return sg, client, nil
}

// newScopedSaga is a Saga on client for the runs of scope; a bad scope
// is a bad argument.
func newScopedSaga(client *idem.Client, scope string) (*saga.Saga, error) {
	var opts []saga.Option
	if scope != "" {
		opts = append(opts, saga.WithScope(scope))
	}
	sg, err := saga.New(client, opts...)
	switch {
	case errors.Is(err, saga.ErrInvalid):
		return nil, fmt.Errorf("--scope %q: %w", scope, err)
	case errors.Is(err, saga.ErrNoRunKeeper):
		return nil, fmt.Errorf("this keystore cannot keep saga runs: %w", err)
	}
	return sg, err
}

// showRun reads one run with the states of its intents, and words the
// failures: no such run (status 1), a bad id (2), a damaged record (1).
func (env *runsEnv) showRun(ctx context.Context, sg *saga.Saga, ref runRef) (saga.RunInfo, error) {
	info, err := sg.Show(ctx, ref.id)
	switch {
	case errors.Is(err, saga.ErrRunNotFound):
		return info, failedf("no run %q in %s%s", ref.id, env.ks.display(), scopeHint(ref.scope))
	case errors.Is(err, saga.ErrInvalid):
		return info, fmt.Errorf("run %q: %w", ref.String(), err)
	case errors.Is(err, keystore.ErrCorrupt):
		return info, failedf("run %q in %s is damaged and not shown: %v", ref.String(), env.ks.display(), err)
	case err != nil:
		return info, fmt.Errorf("reading %s: %w", env.ks.display(), err)
	}
	return info, nil
}

// scopeHint says where a run was looked for: a run stored under a scope
// is found only with it.
func scopeHint(scope string) string {
	if scope == "" {
		return " without a scope (a run stored under one needs --scope or SCOPE@RUN; idem runs list shows them all)"
	}
	return " in scope " + scope
}

// unsettled reports whether an intent in state s has no proven outcome:
// pending, accepted (its operation not seen final) or expired.
func unsettled(s idem.State) bool {
	return s == idem.Pending || s == idem.Accepted || s == idem.Expired
}

// unsettledSteps counts the steps of a run with an intent (the step's or
// its compensation's) whose outcome is not proven.
func unsettledSteps(info saga.RunInfo) int {
	n := 0
	for _, st := range info.Steps {
		if unsettled(st.IntentState) || unsettled(st.CompensationState) {
			n++
		}
	}
	return n
}
