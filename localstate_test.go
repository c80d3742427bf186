package idem

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLocalStateKeepsSecretsAndUnsentApart(t *testing.T) {
	t.Parallel()
	var s localState
	auth := http.Header{"Authorization": {"Bearer a"}}
	params := url.Values{"api_key": {"k"}}

	s.begun("k1", auth, params, true)
	assert.Equal(t, []string{"k1"}, s.unsentKeys())
	h, p, unsent := s.forSend("k1")
	assert.Equal(t, auth, h)
	assert.Equal(t, params, p)
	assert.True(t, unsent, "begun and not sent")
	_, _, unsent = s.forSend("k1")
	assert.False(t, unsent, "sent once: no longer unsent")
	assert.Empty(t, s.unsentKeys())

	s.markUnsent("k1")
	s.forget("k1")
	h, p, unsent = s.forSend("k1")
	assert.Nil(t, h)
	assert.Nil(t, p)
	assert.False(t, unsent, "a settled intent is forgotten, unsent mark and all: it is never sent again")
	require.NotContains(t, s.m, "k1")

	// A later Begin of an existing intent replaces the secrets and leaves
	// unsent as it was.
	s.begun("k2", auth, nil, false)
	_, _, unsent = s.forSend("k2")
	assert.False(t, unsent)
	other := http.Header{"Authorization": {"Bearer b"}}
	s.putSecrets("k2", other)
	assert.Equal(t, other, s.secrets("k2"))

	// Entries with nothing left in them are gone.
	s.forget("k2")
	require.NotContains(t, s.m, "k2")
	require.NotContains(t, s.m, "k1")
	s.begun("k3", nil, nil, false)
	require.NotContains(t, s.m, "k3")
}

// putSecrets replaces key's secrets by h, as another Begin of the same
// name would: for tests that need the secrets to change under an intent.
func (s *localState) putSecrets(key string, h http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[key]
	e.secrets = h
	s.set(key, e)
}
