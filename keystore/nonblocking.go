package keystore

// NonBlocking is offered by stores whose writes never wait on anything
// outside the process: no disk, no network, at most a lock held by
// another call that does no I/O either (Memory). A caller that bounds
// every write with a timer and a goroutine of its own, so that a stalled
// disk or connection cannot hold it past its deadline (idem's write
// grace), may call such a store directly: there is nothing to stall.
//
// A store that wraps another reports what its own writes do: a wrapper
// that adds I/O (a remote mirror, a log on disk) must not forward the
// answer of the store it wraps.
//
// Use it through a type assertion:
//
//	if nb, ok := store.(keystore.NonBlocking); ok && nb.WritesNeverBlock() { ... }
type NonBlocking interface {
	// WritesNeverBlock reports whether every write (Create, Update and
	// their Adopter and Deferrer forms) returns without waiting on I/O.
	WritesNeverBlock() bool
}
