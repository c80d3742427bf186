package keystore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNotDamaged: a repair was asked for a record that reads soundly
// (DamageRepairer). A sound record is settled or purged, never repaired.
var ErrNotDamaged = errors.New("keystore: the record is not damaged")

// ErrDamageChanged: the damaged record changed between Damaged and
// ReplaceDamaged (another process wrote it); nothing was written. Read it
// again before deciding.
var ErrDamageChanged = errors.New("keystore: the damaged record changed since it was read; nothing written")

// DamagedRecord is what a keystore still holds of a record that fails its
// checksum or does not decode.
type DamagedRecord struct {
	// Key is the key the record is stored under.
	Key string
	// Name is the stored name (ScopedName) the keystore binds to Key: the
	// name index (Bolt) or the name column (Postgres). "" when no name is
	// bound to the key.
	Name string
	// Raw is the record as stored, byte for byte (Bolt: its encoding;
	// Postgres: its row as JSON), for an export, and so ReplaceDamaged
	// writes only over what was read.
	Raw []byte
	// Why is the error reading the record gives.
	Why error
}

// BusinessName is the business name of the damaged record, "" if none.
func (d *DamagedRecord) BusinessName() string {
	name, _ := splitScopedName(d.Name)
	return name
}

// DamageRepairer is a Store that reads a damaged record as stored and
// replaces it, the way `idem intents repair` does. Bolt and
// pgkeystore.Store implement it.
type DamageRepairer interface {
	// Damaged returns what is stored under key when the record there is
	// damaged: ErrNotFound when there is none, ErrNotDamaged when it
	// reads soundly.
	Damaged(ctx context.Context, key string) (*DamagedRecord, error)
	// ReplaceDamaged replaces the damaged record d by r in one atomic
	// step, only while it is still stored as d.Raw (else
	// ErrDamageChanged) and still damaged (else ErrNotDamaged). r.Key
	// must be d.Key and r.Name d.Name: the key and its name stay bound.
	ReplaceDamaged(ctx context.Context, d *DamagedRecord, r *Record) error
}

// Placeholder is the sound record that takes a damaged one's place (see
// DamageRepairer): the same key, bound to the same name, so a re-run of
// the name never begins it under a new key; Expired, so it is never
// resent and a person settles it once the provider says what happened;
// MayHaveExecuted, since nothing proves it did not; and an "unknown"
// reconciliation in its audit trail saying who replaced it, when, and
// note (where the damaged bytes went).
func Placeholder(d *DamagedRecord, by, note string, now time.Time) *Record {
	_, principal := splitScopedName(d.Name)
	now = now.UTC()
	return &Record{
		Key:             d.Key,
		Name:            d.Name,
		Principal:       principal,
		State:           Expired,
		CreatedAt:       now,
		UpdatedAt:       now,
		MayHaveExecuted: true,
		LastError:       "damaged record replaced by a placeholder; its outcome is unknown: settle it once the provider says what happened",
		Reconciliations: []Reconciliation{{
			Outcome: ReconciledUnknown, Source: "manual", By: by, At: now, Note: note,
		}},
	}
}

// checkPlaceholder rejects a replacement that would unbind d's key from
// its name.
func checkPlaceholder(d *DamagedRecord, r *Record) error {
	if d == nil || r == nil || r.Key != d.Key || r.Name != d.Name {
		return errors.New("keystore: replace damaged: the replacement must keep the damaged record's key and name")
	}
	return nil
}

// splitScopedName is ScopedName's inverse for a name whose principal is
// not known: the business name and the principal it was scoped by.
func splitScopedName(stored string) (name, principal string) {
	i := strings.LastIndex(stored, principalNameMark)
	if i < 0 {
		return stored, ""
	}
	return stored[:i], stored[i+len(principalNameMark):]
}

// notDamaged is the error of a repair asked for the sound record under key.
func notDamaged(key string) error { return fmt.Errorf("%w: %s", ErrNotDamaged, keyRef(key)) }
