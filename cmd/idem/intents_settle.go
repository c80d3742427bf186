package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

// settleFlags are the flags of `idem intents settle`.
type settleFlags struct {
	succeeded, failed bool
	note, by          string
	json, force       bool
	// status is the provider's status for a succeeded intent, 0 if not
	// known (idem.Settlement.Status).
	status int
}

func newIntentsSettleCommand(env *intentsEnv) *cobra.Command {
	var f settleFlags
	cmd := &cobra.Command{
		Use:   "settle KEY|NAME (--succeeded|--failed) --note TEXT",
		Short: "Record a verdict reached by hand on an intent whose outcome is unknown",
		Long: `Settle records what a person found out about an intent the client could not
settle itself: a pending intent whose attempts may have taken effect, an
accepted one whose operation went silent, an expired one. Look the payment
up at the provider (its dashboard, its API, by the intent's key or your own
reference), then say what you found: --succeeded or --failed, and in --note
the evidence. Nothing is sent.

The intent becomes succeeded or failed, and its audit trail (see show)
keeps the verdict with who gave it (--by, default $USER@host), when and
why. An intent the server's own answer settled is refused: that answer
stands.

The program's next call of a succeeded intent answers from the verdict,
marked Idem-Settlement: manual. Its status is --status, the 2xx the
provider answered with as you found it (201 for a create, say); without
--status it is 200, a status idem made up, and the header says so.

In a keystore a fleet shares (Postgres), settle claims the intent first,
as a worker does before it sends, so no worker sends it while the verdict
is written. An intent another live worker holds (it may have an attempt
in flight) is refused: wait for the worker, or give --force. Forced, the
verdict is recorded at once, and the worker's answer, when it comes, is
kept in the audit trail as evidence; an answer that contradicts the
verdict (the payment was made after all) makes the worker's call, and
every later one, fail with a verdict conflict for a person to resolve.`,
		Example: `  idem intents settle batch-42/payment-3 --succeeded --note "pay_123 in the provider dashboard"
  idem intents settle batch-42/payment-4 --succeeded --status 201 --note "pay_124 created; its log shows 201"
  idem intents settle 0b0f4a52-8d1e-4f8e-9a52-1c3a0e6f4b1d --failed --note "no such payment; ticket OPS-7" --by alice`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("by") {
				f.by = defaultSettler(env.getenv)
			}
			return runSettle(cmd.Context(), cmd.OutOrStdout(), env, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.succeeded, "succeeded", false, "the effect happened (the provider has the payment)")
	fl.BoolVar(&f.failed, "failed", false, "the effect did not happen and will not")
	fl.StringVar(&f.note, "note", "", "the evidence the verdict rests on (required)")
	fl.StringVar(&f.by, "by", "", "who decides (default $USER@hostname)")
	fl.IntVar(&f.status, "status", 0, "with --succeeded: the 2xx (not 202) the provider answered with, replayed to the program (default: 200, marked as made up)")
	fl.BoolVar(&f.json, "json", false, "print the settled intent as a JSON object, as show --json does")
	fl.BoolVar(&f.force, "force", false, "settle even while another worker holds the intent; its late answer is kept as conflicting evidence")
	return cmd
}

// defaultSettler is $USER@hostname, with "unknown" for a part not known,
// so the audit trail always names someone.
func defaultSettler(getenv func(string) string) string {
	user := strings.TrimSpace(getenv("USER"))
	if user == "" {
		user = "unknown"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return user + "@" + host
}

// outcome returns the verdict the flags give, after checking them.
func (f settleFlags) outcome() (idem.Outcome, error) {
	switch {
	case f.succeeded == f.failed:
		return idem.OutcomeUnknown, errors.New("give exactly one of --succeeded and --failed: what the provider says happened")
	case strings.TrimSpace(f.note) == "":
		return idem.OutcomeUnknown, errors.New("--note is required: the evidence the verdict rests on, kept in the audit trail")
	case strings.TrimSpace(f.by) == "":
		return idem.OutcomeUnknown, errors.New("--by: empty; name who decides (default $USER@hostname)")
	case f.status != 0 && (f.failed || f.status < 200 || f.status > 299 || f.status == http.StatusAccepted):
		return idem.OutcomeUnknown, fmt.Errorf("--status %d: give, with --succeeded, the 2xx (not 202) the provider answered with", f.status)
	case f.succeeded:
		return idem.OutcomeSucceeded, nil
	default:
		return idem.OutcomeFailed, nil
	}
}

func runSettle(ctx context.Context, out io.Writer, env *intentsEnv, keyOrName string, f settleFlags) error {
	if strings.TrimSpace(keyOrName) == "" {
		return errors.New("settle: empty key or name")
	}
	o, err := f.outcome()
	if err != nil {
		return err
	}
	st, err := env.ks.open(ctx)
	if err != nil {
		return err
	}
	client, err := idem.New(idem.WithStore(st)) // the client closes st
	if err != nil {
		return err
	}
	defer client.Close()
	rec, err := findIntent(ctx, st, keyOrName)
	if err != nil {
		return env.lookupError(keyOrName, err)
	}
	_, err = client.Settle(ctx, rec.Key, idem.Settlement{Outcome: o, By: f.by, Note: f.note, Force: f.force, Status: f.status})
	if errors.Is(err, idem.ErrNotReconcilable) {
		return alreadySettled(ctx, st, rec)
	}
	if errors.Is(err, idem.ErrIntentBusy) {
		return failedf("intent %s is held by another live worker, which may have an attempt in flight; "+
			"wait for it to finish (or for its claim to run out), or give --force: its answer is then kept in the audit trail as conflicting evidence",
			rec.Key)
	}
	if err != nil {
		return err
	}
	// Read back what was stored: the line and the JSON show the keystore,
	// not what was asked for.
	if rec, err = st.Get(ctx, rec.Key); err != nil {
		return fmt.Errorf("reading %s: %w", env.ks.display(), err)
	}
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(detail(rec))
	}
	_, err = fmt.Fprintln(out, settledLine(rec))
	return err
}

// settledLine is "settled  KEY  NAME  succeeded (manual, by alice: note)".
func settledLine(rec *keystore.Record) string {
	var b strings.Builder
	b.WriteString("settled  " + rec.Key)
	if rec.Name != "" {
		b.WriteString("  " + oneLineOf(keystore.BusinessName(rec.Name, rec.Principal), 48))
	}
	if n := len(rec.Reconciliations); n > 0 {
		b.WriteString("  " + verdictText(rec.Reconciliations[n-1]))
	}
	return b.String()
}

// alreadySettled explains, in one line, why an intent cannot be settled:
// what settled it before, the server's answer or an earlier verdict.
func alreadySettled(ctx context.Context, st keystore.Store, rec *keystore.Record) error {
	if now, err := st.Get(ctx, rec.Key); err == nil {
		rec = now // settled by someone else since we looked
	}
	who := "intent " + rec.Key
	if rec.Name != "" {
		who += " (" + oneLineOf(keystore.BusinessName(rec.Name, rec.Principal), 48) + ")"
	}
	if v, ok := settledBy(rec); ok {
		return failedf("%s was already settled as %s at %s; a verdict is never replaced",
			who, verdictText(v), v.At.UTC().Format("2006-01-02T15:04:05Z"))
	}
	answer := lastOutcome(rec)
	return failedf("%s is already %s by the server's answer (%s), which stands; only pending, accepted or expired intents can be settled",
		who, rec.State, answer)
}
