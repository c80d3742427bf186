package idem

import (
	"errors"
	"testing"
)

// Every outcome, fresh and after doubt: only the listed proofs settle.
func TestJudgeAnswer(t *testing.T) {
	t.Parallel()
	type want struct {
		state   State
		reason  error
		unknown bool
	}
	cases := []struct {
		o           outcome
		fresh, doub want
	}{
		{outcomeSuccess, want{state: Succeeded}, want{state: Succeeded}},
		{outcomeAccepted, want{state: Accepted}, want{state: Accepted}},
		{outcomeRejected, want{state: Failed, reason: ErrFinalFailure}, want{state: Failed, reason: ErrFinalFailure}},
		{outcomeKeyReused, want{state: Failed, reason: ErrKeyReused}, want{unknown: true}},
		{outcomeRefused, want{state: Failed, reason: ErrFinalFailure}, want{unknown: true}},
		{outcomeUnresolvable, want{unknown: true}, want{unknown: true}},
		// Not proofs: the attempt loop never stops on these with an
		// answer, and if it did they would prove nothing.
		{outcomeRetry, want{unknown: true}, want{unknown: true}},
		{outcomeRetryUnsure, want{unknown: true}, want{unknown: true}},
		{outcomeUnknown, want{unknown: true}, want{unknown: true}},
		{outcome(99), want{unknown: true}, want{unknown: true}},
	}
	for _, tc := range cases {
		for _, doubt := range []bool{false, true} {
			w := tc.fresh
			if doubt {
				w = tc.doub
			}
			j := judgeAnswer(tc.o, doubt)
			if j.unknown != w.unknown {
				t.Errorf("%s doubt=%v: unknown = %v, want %v", tc.o, doubt, j.unknown, w.unknown)
				continue
			}
			if w.unknown {
				if j.why == nil || j.why(500, tc.o) == nil {
					t.Errorf("%s doubt=%v: an unknown outcome must say why", tc.o, doubt)
				}
				continue
			}
			if j.state != w.state || !errors.Is(j.reason, w.reason) || (w.reason == nil) != (j.reason == nil) {
				t.Errorf("%s doubt=%v: %s %v, want %s %v", tc.o, doubt, j.state, j.reason, w.state, w.reason)
			}
		}
	}
}

func TestJudgeOperation(t *testing.T) {
	t.Parallel()
	for v, want := range map[pollVerdict]struct {
		ok, unknown bool
		state       State
		reason      error
	}{
		verdictDone:            {ok: true, state: Succeeded},
		verdictOperationFailed: {ok: true, state: Failed, reason: ErrOperationFailed},
		verdictGone:            {ok: true, unknown: true, state: Accepted, reason: ErrOperationGone},
		verdictUnproven:        {ok: true, unknown: true, state: Accepted, reason: ErrOperationUnknown},
		verdictPending:         {state: Accepted},
		verdictSilent:          {state: Accepted},
		verdictUnasked:         {state: Accepted},
		pollVerdict(99):        {state: Accepted},
	} {
		j, ok := judgeOperation(v)
		if ok != want.ok || j.unknown != want.unknown || j.state != want.state || j.reason != want.reason {
			t.Errorf("verdict %d: ok=%v %+v, want %+v", v, ok, j, want)
		}
	}
}
