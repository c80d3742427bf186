package keystore

import (
	"math"
	"time"
)

// PurgeRequest says what Purge removes. A purge must not forget a name
// the server still remembers the key of: a re-run of the same business
// operation would then mint a new key and be applied again. So a purged
// named record younger than the server's retention is kept as a
// tombstone (see Record.Tombstone) until the retention has passed.
type PurgeRequest struct {
	// OlderThan: settled records (Succeeded, Failed, and Expired with
	// IncludeUnknown) last updated before it are purged. Pending and
	// Accepted records never are. The zero time purges nothing.
	OlderThan time.Time
	// KeepNamesAfter is the retention cutoff, typically now minus the
	// server's key retention: a purged named record created after it
	// becomes a tombstone; one created at or before it, an unnamed one,
	// and a tombstone created at or before it are deleted for good. The
	// zero time keeps a tombstone of every purged named record.
	KeepNamesAfter time.Time
	// IncludeUnknown also purges the records whose outcome is unknown:
	// Expired ones (their key may have been sent and the server may have
	// forgotten it, so one deleted for good lets a re-run of its name pay
	// again) and Failed ones whose operation was gone
	// (Record.OperationGone). Without it they are kept until a verdict
	// settles them. Pending and Accepted records are never purged.
	IncludeUnknown bool
}

// PurgeResult counts what a Purge did.
type PurgeResult struct {
	// Deleted counts records deleted for good, tombstones included.
	Deleted int `json:"deleted"`
	// Tombstoned counts records reduced to tombstones.
	Tombstoned int `json:"tombstoned"`
}

// PurgeAction is what a Purge does to one record.
type PurgeAction int

// What a Purge does to a record.
const (
	// PurgeKeep leaves the record as it is.
	PurgeKeep PurgeAction = iota
	// PurgeTombstone replaces the record with its tombstone.
	PurgeTombstone
	// PurgeDelete deletes the record (or tombstone) for good.
	PurgeDelete
)

// Action reports what a Purge with p does to r; every Store decides by
// it, and a dry run can count with it.
func (p PurgeRequest) Action(r *Record) PurgeAction {
	if !p.IncludeUnknown && r.OperationGone() {
		return PurgeKeep
	}
	return p.action(r.State, r.Name != "", r.CreatedAt, r.UpdatedAt, r.Purged)
}

func (p PurgeRequest) action(s State, named bool, created, updated, purged time.Time) PurgeAction {
	return p.actionAt(s, named, instant(created), instant(updated), !purged.IsZero())
}

// actionAt is action with the record's times as instants (see instant),
// which Memory keeps beside each record.
func (p PurgeRequest) actionAt(s State, named bool, created, updated int64, purged bool) PurgeAction {
	pastRetention := !p.KeepNamesAfter.IsZero() && created <= instant(p.KeepNamesAfter)
	switch {
	case !s.Settled():
		return PurgeKeep
	case s == Expired && !p.IncludeUnknown:
		return PurgeKeep
	case purged:
		if pastRetention {
			return PurgeDelete
		}
		return PurgeKeep
	case updated >= instant(p.OlderThan):
		return PurgeKeep
	case named && !pastRetention:
		return PurgeTombstone
	}
	return PurgeDelete
}

// instant is t in nanoseconds since 1970, clamped to the years UnixNano
// can hold (1678 to 2262): a time out of them is on the same side of any
// cutoff either way. The zero time is the least of all, before every
// other.
func instant(t time.Time) int64 {
	switch {
	case t.IsZero():
		return math.MinInt64
	case t.Before(time.Unix(0, math.MinInt64+1)):
		return math.MinInt64 + 1
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// Tombstone returns what a purge keeps of r, purged at purged: what
// identifies the intent (key, name, fingerprint, principal, request
// method, URL and host), its state, times and attempt count, and the
// status and headers of its stored answer. Bodies, request headers, the
// audit trail and the error text are dropped, and so is the answer's
// Content-Length, which described the dropped body. Create with the
// tombstone's name returns it, so the name keeps its key and its
// fingerprint still tells a conflicting payload.
func (r *Record) Tombstone(purged time.Time) *Record {
	t := &Record{
		Key: r.Key, Name: r.Name, Method: r.Method, URL: r.URL, Host: r.Host,
		Fingerprint: r.Fingerprint, State: r.State,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, AcceptedAt: r.AcceptedAt,
		Attempts: r.Attempts, MayHaveExecuted: r.MayHaveExecuted,
		Principal: r.Principal, Purged: purged,
	}
	if r.SecretHeaders != nil {
		t.SecretHeaders = append([]string(nil), r.SecretHeaders...)
	}
	if r.Response != nil {
		t.Response = &Response{Status: r.Response.Status, Header: r.Response.Header.Clone()}
		t.Response.Header.Del("Content-Length")
	}
	return t
}
