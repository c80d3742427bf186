package idem

import (
	"fmt"
)

// judgement is what one piece of evidence proves about an intent: the
// state it settles the intent in, or none (unknown), and the reason the
// caller's error matches. Every verdict the client reaches from an answer
// is reached in judgeAnswer or judgeOperation, from the evidence the
// protocol's "Proofs" section lists; what is not on that list proves
// nothing and leaves the intent unsettled.
type judgement struct {
	// state is the state the evidence proves: Succeeded or Failed; or
	// Accepted, an operation to poll. Unused when unknown is set.
	state State
	// reason is what the caller's error matches for a Failed state.
	reason error
	// unknown says the evidence proves nothing: the intent stays
	// unsettled, the error matches ErrOutcomeUnknown, and the Reconciler
	// is asked.
	unknown bool
	// why says, for an unknown outcome, what the answer was and why it
	// proves nothing, given its status and outcome.
	why func(status int, o outcome) error
}

// judgeAnswer judges a final answer to the intent's own request (one the
// attempt loop stopped on, not a give-up), read through the dialect as o.
// doubt says an earlier attempt, or this call's, may have taken effect.
func judgeAnswer(o outcome, doubt bool) judgement {
	switch o {
	case outcomeSuccess:
		// A 2xx other than a 202 with Location, a replay of one, a 303.
		return judgement{state: Succeeded}
	case outcomeAccepted:
		// Taken on: its operation is polled and judged by judgeOperation.
		return judgement{state: Accepted}
	case outcomeRejected:
		// The server proves the key itself was refused before anything
		// ran: a failure whatever came before.
		return judgement{state: Failed, reason: ErrFinalFailure}
	case outcomeKeyReused, outcomeRefused:
		if doubt {
			// After a possible effect, even "key reused" may be the
			// server holding the key for our own earlier attempt.
			return judgement{unknown: true, why: provesNothingAfterDoubt}
		}
		// Nothing of this intent can have run: the refusal is final.
		if o == outcomeKeyReused {
			return judgement{state: Failed, reason: ErrKeyReused}
		}
		return judgement{state: Failed, reason: ErrFinalFailure}
	case outcomeUnresolvable:
		return judgement{unknown: true, why: mayFollowAnExecutedRequest}
	}
	// Any other outcome (the attempt loop stops on none of them with an
	// answer) is not on the list of proofs.
	return judgement{unknown: true, why: notAProof}
}

func provesNothingAfterDoubt(status int, o outcome) error {
	return fmt.Errorf("server answered %d (%s), which does not prove whether an earlier attempt took effect", status, o)
}

func mayFollowAnExecutedRequest(status int, _ outcome) error {
	return fmt.Errorf("server answered %d, which may follow an executed request; resending cannot tell", status)
}

func notAProof(status int, o outcome) error {
	return fmt.Errorf("server answered %d (%s), which proves no outcome", status, o)
}

// judgeOperation judges what polling an accepted intent's operation
// learnt. ok is false when it proves nothing final (pending, silent,
// unasked): the intent stays Accepted without an error.
func judgeOperation(v pollVerdict) (j judgement, ok bool) {
	switch v {
	case verdictDone:
		// A success word the dialect documents, or the result itself.
		return judgement{state: Succeeded}, true
	case verdictOperationFailed:
		// A failed or canceled word the dialect documents.
		return judgement{state: Failed, reason: ErrOperationFailed}, true
	case verdictGone:
		// The 202 proved the request was taken; a missing operation
		// says nothing of what became of it.
		return judgement{state: Accepted, reason: ErrOperationGone, unknown: true}, true
	case verdictUnproven:
		// A 4xx to the poll, or a status word no source documents.
		return judgement{state: Accepted, reason: ErrOperationUnknown, unknown: true}, true
	}
	return judgement{state: Accepted}, false
}
