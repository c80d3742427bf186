package truthtest

import "sync"

// Ledger is the server's record of effects: every payment it made, by the
// idempotency key (in its account's scope) that made it and by the
// business intent its body names. It is the truth the client's record is
// checked against.
type Ledger struct {
	mu       sync.Mutex
	byKey    map[string]int
	byIntent map[string]int
}

func newLedger() *Ledger {
	return &Ledger{byKey: make(map[string]int), byIntent: make(map[string]int)}
}

// record notes one effect of key (scoped) for intent.
func (l *Ledger) record(scopedKey, intent string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byKey[scopedKey]++
	l.byIntent[intent]++
}

// Key returns the effects made under key (scoped).
func (l *Ledger) Key(scopedKey string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byKey[scopedKey]
}

// Intent returns the effects made for the business intent.
func (l *Ledger) Intent(intent string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.byIntent[intent]
}

// Keys returns every key (scoped) with its effects.
func (l *Ledger) Keys() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.byKey))
	for k, n := range l.byKey {
		out[k] = n
	}
	return out
}

// Intents returns every intent with its effects.
func (l *Ledger) Intents() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.byIntent))
	for k, n := range l.byIntent {
		out[k] = n
	}
	return out
}
