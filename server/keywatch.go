package server

import (
	"sync"
	"sync/atomic"
)

// KeyWatcher is implemented by a Store that can tell a waiting request
// when the record of a key may have changed: completed, or released so
// the key is free. WithWaitForOriginal waits on it instead of polling.
// MemoryStore implements it; other stores are polled with backoff.
type KeyWatcher interface {
	// WatchKey returns a channel closed at the next completion or
	// release of (scope, key) after the call, and stop, which the caller
	// calls once it no longer waits.
	WatchKey(scope Scope, key string) (changed <-chan struct{}, stop func())
}

// keyWatchers wakes the requests waiting on keys. It costs a key's
// completion one atomic load while nobody waits.
type keyWatchers struct {
	waiting atomic.Int64
	mu      sync.Mutex
	watches map[string]*keyWatch
}

// keyWatch is the channel of one key's waiters and how many they are.
type keyWatch struct {
	ch   chan struct{}
	refs int
}

// watchID names (scope, key) in the map.
func watchID(scope Scope, key string) string {
	return scope.Principal + "\x00" + scope.Method + "\x00" + scope.Route + "\x00" + key
}

// watch registers a waiter on (scope, key).
func (w *keyWatchers) watch(scope Scope, key string) (<-chan struct{}, func()) {
	id := watchID(scope, key)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watches == nil {
		w.watches = make(map[string]*keyWatch)
	}
	kw := w.watches[id]
	if kw == nil {
		kw = &keyWatch{ch: make(chan struct{})}
		w.watches[id] = kw
	}
	kw.refs++
	w.waiting.Add(1)
	var once sync.Once
	return kw.ch, func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.waiting.Add(-1)
			kw.refs--
			if kw.refs == 0 && w.watches[id] == kw {
				delete(w.watches, id)
			}
		})
	}
}

// notify wakes every waiter on (scope, key).
func (w *keyWatchers) notify(scope Scope, key string) {
	if w.waiting.Load() == 0 {
		return
	}
	id := watchID(scope, key)
	w.mu.Lock()
	defer w.mu.Unlock()
	if kw := w.watches[id]; kw != nil {
		close(kw.ch)
		delete(w.watches, id)
	}
}
