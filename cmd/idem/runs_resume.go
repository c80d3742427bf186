package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/saga"
)

func newRunsResumeCommand(env *runsEnv) *cobra.Command {
	var f resumeFlags
	cmd := &cobra.Command{
		Use:   "resume RUN",
		Short: "Resend the run's unsettled intents with their keys, then report the run's state",
		Long: `Resume does for one run what a CLI can do without the program: every
intent of the run that is pending (its answer lost) is sent again with the
key it was born with, the steps' and the compensations' alike, exactly as
idem intents resume does; an accepted one (202) is polled. A provider that
honours Idempotency-Key replays what already happened instead of doing it
twice. Then it prints the run's state and what is left to do.

It never decides: it begins no step the program has not begun, starts no
compensation the program has not begun, and never completes or fails the
run; the program does that when it runs again (Saga.Run with the same id),
its settled steps replaying from the keystore. An intent that expired
(past the provider's key retention) is not resent: record a verdict on it
with idem runs resolve.

Credentials are never stored in a keystore: give them as for idem intents
resume, with --token (or $` + tokenEnv + `), --header and --origin.

The exit status is 1 when an intent of the run is left with its outcome
unknown (pending, accepted, expired, or refused for its credentials), or
the run needs an operator; 0 otherwise, even when the program has work
left (show says what).`,
		Example: `  idem runs resume order-42 --token "$API_TOKEN"
  idem runs resume tenant-a@order-42 --header 'Authorization: Bearer sk_live_…' --json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.token == "" {
				f.token = env.getenv(tokenEnv)
			}
			return runRunsResume(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), env, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.token, "token", "", "bearer token sent as 'Authorization: Bearer TOKEN' (default $"+tokenEnv+")")
	fl.StringArrayVarP(&f.headers, "header", "H", nil, "header 'Name: value' added to every attempt, like --token (repeatable)")
	fl.StringArrayVar(&f.origins, "origin", nil, "send --token and --header only to this origin, e.g. https://api.example.com (repeatable; default: the intents' origins)")
	fl.IntVar(&f.maxAttempts, "max-attempts", idem.DefaultMaxAttempts, "attempts per intent, counting the first")
	fl.DurationVar(&f.timeout, "timeout", time.Minute, "deadline for settling one intent, all its attempts included")
	fl.DurationVar(&f.retention, "retention", idem.DefaultRetention, "the server's key retention: older intents are not resent")
	fl.BoolVar(&f.noProgress, "no-progress", false, "print one line per intent instead of a progress bar")
	fl.BoolVar(&f.json, "json", false, "print the intents' outcomes and the run as one JSON object")
	f.concurrency = 1 // a run's steps are sent in their order
	return cmd
}

// runsResumeReport is what `idem runs resume --json` prints.
type runsResumeReport struct {
	Keystore string          `json:"keystore"`
	Intents  []resumedIntent `json:"intents"`
	Run      runDetail       `json:"run"`
	Error    string          `json:"error,omitempty"`
}

func runRunsResume(ctx context.Context, stdout, stderr io.Writer, env *runsEnv, arg string, f resumeFlags) error {
	ref, err := env.parseRun(arg)
	if err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		return err
	}
	creds, err := f.credentials()
	if err != nil {
		return err
	}
	st, err := env.ks.open(ctx)
	if err != nil {
		return err
	}
	var scope originSet // set once the intents are selected
	client, hc, err := newResumeClient(st, f, creds, &scope)
	if err != nil {
		_ = st.Close()
		return err
	}
	defer hc.CloseIdleConnections()
	defer client.Close()
	sg, err := newScopedSaga(client, ref.scope)
	if err != nil {
		return err
	}
	info, err := env.showRun(ctx, sg, ref)
	if err != nil {
		return err
	}
	intents, err := runIntentsToResend(ctx, client, info)
	if err != nil {
		return fmt.Errorf("reading %s: %w", env.ks.display(), err)
	}
	scope = credentialScope(f, intents)
	withheld := func(in *idem.Intent) string {
		if len(creds) == 0 {
			return ""
		}
		return scope.leavesOut(in.URL)
	}
	lines := stdout
	if f.json {
		lines = io.Discard
	}
	var results []outcome
	if len(intents) > 0 {
		rep := newReporter(lines, stderr, len(intents), !f.noProgress && !f.json && isTerminal(stderr))
		results = settleAll(ctx, client, intents, f, rep, withheld)
		rep.finish()
	} else {
		fmt.Fprintf(lines, "nothing to resend: run %s has no pending or accepted intent\n", ref)
	}
	if info, err = env.showRun(ctx, sg, ref); err != nil {
		return err
	}
	d := describeRun(info)
	resErr := runResumeError(ref, results, d)
	if f.json {
		rep := runsResumeReport{Keystore: env.ks.display(), Intents: resumedIntents(results), Run: d}
		if resErr != nil {
			rep.Error = errorLine(resErr.Error())
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
		return resErr
	}
	fmt.Fprintf(stdout, "run %s is %s", ref, d.State)
	if d.Unsettled > 0 {
		fmt.Fprintf(stdout, ", %d of its %d steps unsettled", d.Unsettled, d.StepCount)
	}
	fmt.Fprintln(stdout)
	for _, line := range d.Todo {
		fmt.Fprintln(stdout, "  - "+line)
	}
	return resErr
}

// runIntentsToResend are the intents of the run's steps and
// compensations that a resend may settle: pending and accepted ones, in
// the order the steps began, each step before its compensation.
func runIntentsToResend(ctx context.Context, client *idem.Client, info saga.RunInfo) ([]*idem.Intent, error) {
	var out []*idem.Intent
	for _, st := range info.Steps {
		if st.Kind != "http" {
			continue
		}
		for _, c := range []struct {
			key   string
			state idem.State
		}{{st.Key, st.IntentState}, {st.CompensationKey, st.CompensationState}} {
			if c.state != idem.Pending && c.state != idem.Accepted {
				continue
			}
			in, err := client.Resume(ctx, c.key)
			if err != nil {
				return nil, err
			}
			out = append(out, in)
		}
	}
	return out, nil
}

// runResumeError is the error a run's resume ends with: an intent left
// unsettled, or a run that needs an operator; nil otherwise.
func runResumeError(ref runRef, results []outcome, d runDetail) error {
	var left int
	var lastErr error
	for _, r := range results {
		if r.state != idem.Succeeded && r.state != idem.Failed {
			left++
			if r.err != nil {
				lastErr = r.err
			}
		}
	}
	var msg string
	switch {
	case left > 0:
		msg = fmt.Sprintf("run %s: %d of %d resent %s left with %s outcome unknown", ref, left, len(results),
			plural(len(results), "intent", "intents"), plural(left, "its", "their"))
		if lastErr != nil {
			msg += "; last error: " + oneLineOf(lastErr.Error(), 300)
		}
	case d.Unsettled > 0:
		msg = fmt.Sprintf("run %s: %d %s an intent whose outcome is unknown and that no resend settles (see the lines above)",
			ref, d.Unsettled, plural(d.Unsettled, "step has", "steps have"))
	case d.State == saga.NeedsOperator:
		msg = fmt.Sprintf("run %s needs an operator (see the lines above)", ref)
	default:
		return nil
	}
	return failed(errors.New(msg))
}

// resumedIntents are the outcomes as resume --json prints them.
func resumedIntents(results []outcome) []resumedIntent {
	out := []resumedIntent{}
	for _, r := range results {
		in := resumedIntent{Key: r.key, Name: r.name, State: r.state, Status: r.status}
		if r.err != nil {
			in.Error = oneLineOf(r.err.Error(), 1<<10)
		}
		out = append(out, in)
	}
	return out
}
