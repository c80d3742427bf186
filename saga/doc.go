// Package saga runs operations of several calls, each step an idem
// intent, with compensations that undo the finished steps when a later
// one fails.
//
// A run has an id the caller gives (an order number); a step is an
// intent whose idempotency key is derived from the run and the step's
// name (DeriveStepKey), so a crash, a resume in another process, or even
// the loss of the keystore sends the same key again and the provider
// deduplicates what is repeated. A run keeps a decision record in the same
// keystore as its intents (keystore.RunKeeper: the bbolt file for one
// process, Postgres for a fleet, or memory): Running, then Completed, or Compensating and then Compensated,
// or NeedsOperator when a compensation cannot be proven.
//
// A program runs its steps in order, the same code on every resume:
//
//	run, err := s.Run(ctx, "order-42")
//	charge, err := run.Step(ctx, "charge", chargeReq, saga.Compensate(refundOf))
//	if err != nil {
//		return run.Fail(ctx, err) // undoes what was done, in reverse order
//	}
//	...
//	return run.Complete(ctx)
//
// A step settled before (in this process or in one that died) is not
// sent again: its answer is replayed from the keystore. A resumed run
// re-runs the same code from the top, the settled steps replaying, and
// goes on from the first step that has not run, as DBOS Transact resumes
// a workflow from its last completed step
// (https://docs.dbos.dev/explanations/how-workflows-work).
//
// The rules, each with a typed error:
//
//   - A step whose outcome is unknown (its answer lost, retries
//     exhausted) is neither passed nor compensated until it settles: by a
//     later resend with its key, a Reconciler, or a person (`idem intents
//     settle`). The run reports it with a *StepUnknownError and never
//     guesses.
//   - Once a run is compensating, a step that never began cannot begin
//     (*RunStateError); steps that began replay, so a resumed program
//     reaches its Fail again.
//   - Compensations run in reverse order, each an intent with its own
//     derived key, so each is made at most once at the provider. A
//     compensation refused by the provider, or one whose outcome can no
//     longer be learnt, leaves the run NeedsOperator (*NeedsOperatorError);
//     ResolveStep records a person's verdict and Fail goes on.
//   - A step whose request changed under the same name is a
//     *StepConflictError, never a new call.
//   - A local step (Run.Local) stores its function's result in the run's
//     record and replays it; the function runs again only if the process
//     died before the result was stored.
//
// One run is driven by one process at a time: a second writer's change
// is refused (ErrRunChanged), never merged.
package saga
