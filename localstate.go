package idem

import (
	"net/http"
	"net/url"
	"sync"
)

// localState is what this process alone knows of its intents, per key,
// and never stores: the secrets (headers, query parameters) to send them
// with, and whether they were never executed. One map and one lock hold
// all of it, so a Begin and its Do touch them once each.
//
// The secrets are kept in the header as Begin was given it (with names
// canonical and no key header), read for its secret headers alone. It is
// never modified once stored: Begin hands over a map it built, readers
// get it read-only, and the first attempt, which sends that very map,
// has the entry replaced by a copy (keepOwnCopy) before the caller can
// change it.
type localState struct {
	mu sync.Mutex
	m  map[string]localIntent
}

// localIntent is one intent's entry; an entry with nothing in it is
// deleted.
type localIntent struct {
	secrets http.Header
	params  url.Values
	// unsent says the intent was never executed: begun here and not sent
	// since, or its every attempt answered "not executed". Only for such
	// an intent may a refusal that proves nothing fail it.
	unsent bool
}

func (e localIntent) empty() bool {
	return len(e.secrets) == 0 && len(e.params) == 0 && !e.unsent
}

// set stores e under key, or deletes the entry when e holds nothing.
// Callers hold s.mu.
func (s *localState) set(key string, e localIntent) {
	if e.empty() {
		delete(s.m, key)
		return
	}
	if s.m == nil {
		s.m = make(map[string]localIntent)
	}
	s.m[key] = e
}

// begun records what Begin learnt of key: its secrets, which replace any
// earlier ones, and, for an intent it created, that it is unsent. Begin
// hands the maps over: it must not modify them afterwards.
func (s *localState) begun(key string, secrets http.Header, params url.Values, created bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[key]
	e.secrets, e.params = secrets, params
	e.unsent = e.unsent || created
	s.set(key, e)
}

// forSend returns key's secrets for an attempt, and whether the intent
// was unsent, which it no longer is.
func (s *localState) forSend(key string) (http.Header, url.Values, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	if !ok {
		return nil, nil, false
	}
	unsent := e.unsent
	if unsent {
		e.unsent = false
		s.set(key, e)
	}
	return e.secrets, e.params, unsent
}

// markUnsent records that key's intent was not executed after all.
func (s *localState) markUnsent(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.m[key]
	e.unsent = true
	s.set(key, e)
}

// keepOwnCopy replaces key's secrets, when they are still the map sent,
// by a copy of the secret headers in it (secret names those): sent went
// out with an attempt and its caller may change it. Secrets dropped or
// replaced since are left as they are.
func (s *localState) keepOwnCopy(key string, sent http.Header, secret map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	if !ok || !sameMap(e.secrets, sent) {
		return
	}
	e.secrets = secretsOf(sent, secret)
	s.set(key, e)
}

// secrets returns the map key's secrets are kept in (see localState),
// or nil; read-only.
func (s *localState) secrets(key string) http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key].secrets
}

// params returns key's secret query parameters, or nil; read-only.
func (s *localState) params(key string) url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key].params
}

// forget drops key's entry: its secrets, and whether it is unsent. Its
// intent is settled (or expired): nothing sends it again, so a Client
// that runs for long holds entries for its unsettled intents alone.
func (s *localState) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

// unsentKeys lists the keys of the unsent intents.
func (s *localState) unsentKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k, e := range s.m {
		if e.unsent {
			out = append(out, k)
		}
	}
	return out
}
