package keystore

import "context"

// Deferrer is offered by stores whose durable writes cost a sync of their
// own (Bolt), for the writes a crash may lose without harm: a record
// becoming settled (Succeeded or Failed) with the server's answer. The
// server keeps that answer under the intent's key, so an intent whose
// settle is lost is Pending again after a crash, its resume sends it with
// the same key, and the server replays the answer: nothing is applied
// twice. What must never be deferred is the write before the first byte
// is sent (Create), without which a crash would forget the key.
//
// Durability contract of UpdateDeferred:
//   - it checks what Update checks (ErrNotFound, a changed name,
//     ErrSettled) against the record as this process sees it, and on
//     success returns without waiting for the write to reach the disk;
//   - from its return on, the record reads back changed in this process
//     (Get, GetByName, List, and an existing record returned by Create);
//   - the write joins the next commit of the store (another write's, or
//     its own after a short delay), and Close commits every deferred
//     write before it returns;
//   - a crash of the process or the machine before that commit loses the
//     write: the record is then as it was stored before it.
//
// Use it through a type assertion:
//
//	if d, ok := store.(keystore.Deferrer); ok { ... }
type Deferrer interface {
	// UpdateDeferred is Update whose write may be lost by a crash until
	// the store's next commit (see Deferrer).
	UpdateDeferred(ctx context.Context, r *Record) error
}

// QuickDeferrer is offered by Deferrers that can often make a deferred
// write without waiting on anything: no disk read, no lock held by a call
// that may be doing I/O. A caller that bounds every write with a timer
// and a goroutine of its own (idem's write grace) may try the quick form
// on its own goroutine first, and bound only the writes it declines.
//
// Use it through a type assertion:
//
//	if q, ok := store.(keystore.QuickDeferrer); ok { done, err := q.TryUpdateDeferred(ctx, r) ... }
type QuickDeferrer interface {
	Deferrer
	// TryUpdateDeferred is UpdateDeferred made only when it can be made
	// at once. When done is false nothing was done, and err is nil: the
	// caller makes the write with UpdateDeferred. When done is true, err
	// is UpdateDeferred's outcome.
	TryUpdateDeferred(ctx context.Context, r *Record) (done bool, err error)
}
