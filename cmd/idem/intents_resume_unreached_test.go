package main

import (
	"errors"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

// A resume exits 2 only when no intent reached its server; one that did,
// or one whose attempt may have been sent, makes it a finding (1).
func TestResume_UnreachedServerExitsTwoOnlyWhenNoneWasReached(t *testing.T) {
	t.Parallel()
	refused := &idem.GiveUpError{Reason: idem.ErrRetriesExhausted, Attempts: 2,
		LastErr: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}
	noHost := &idem.GiveUpError{Reason: idem.ErrRetriesExhausted, Attempts: 1, LastErr: &net.DNSError{Err: "no such host", Name: "pay.invalid", IsNotFound: true}}
	reset := &idem.GiveUpError{Reason: idem.ErrRetriesExhausted, Attempts: 1, OutcomeUnknown: true,
		LastErr: &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}}
	answered := &idem.GiveUpError{Reason: idem.ErrRetriesExhausted, Attempts: 2, LastStatus: 503,
		LastErr: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}

	pending := func(err error) outcome { return outcome{key: "k", state: keystore.Pending, err: err} }
	for _, tc := range []struct {
		name    string
		results []outcome
		want    int
	}{
		{"every server refused the connection", []outcome{pending(refused), pending(noHost)}, exitCannotRun},
		{"one intent succeeded", []outcome{pending(refused), {key: "k2", state: keystore.Succeeded}}, exitFailed},
		{"an attempt may have been sent", []outcome{pending(refused), pending(reset)}, exitFailed},
		{"the server answered an earlier attempt", []outcome{pending(answered)}, exitFailed},
		{"refused for credentials", []outcome{{key: "k", state: stateRefused, err: idem.ErrCredentialsMissing}}, exitFailed},
	} {
		err := summarizeResume(io.Discard, tc.results, 0, "idem.db")
		require.Error(t, err, tc.name)
		assert.Equal(t, tc.want, exitCodeOf(err), "%s: %v", tc.name, err)
	}
	err := summarizeResume(io.Discard, []outcome{pending(refused)}, 1, "idem.db")
	assert.Equal(t, exitFailed, exitCodeOf(err), "a damaged record left unread is a finding")
}
