package keystore

import (
	"context"
	"errors"
)

// NameScanner is implemented by stores that can find the records of one
// business name under every principal (Memory, Bolt, and the Postgres
// keystore). The client asks it before it creates a named intent, so a
// name begun under other credentials, or stored by a build that did not
// scope names by principal, is reported instead of silently becoming a
// second intent with a new key.
type NameScanner interface {
	// Namesakes returns the records whose business name is name, at most
	// limit of them (limit > 0): the record stored under name itself
	// (anonymous, or written before names were scoped) and those stored
	// under ScopedName(name, p) for any principal p. Nil for none.
	Namesakes(ctx context.Context, name string, limit int) ([]*Record, error)
}

// Binding is who a record is bound to: its stored name and principal, and
// the secret headers its attempts must carry.
type Binding struct {
	// Name is the stored name (ScopedName of the business name and
	// Principal).
	Name string
	// Principal is the keyed fingerprint of the principal (see
	// Record.Principal).
	Principal string
	// SecretHeaders names the secrets the intent's attempts carry
	// (Record.SecretHeaders).
	SecretHeaders []string
}

// Rebinder is implemented by stores that can move a record to another
// principal, the one explicit step that changes a record's name (Update
// never does): a person or program that knows two principals name one
// account adopts an intent begun under the other (idem.Client.Adopt).
type Rebinder interface {
	// Rebind binds the record with key, stored under the name from, to
	// b, in one atomic step: its name index moves with it. ErrNotFound
	// when no record with key is stored under from; ErrNameTaken when
	// another record holds b.Name; ErrClaimed when a live worker of a
	// shared keystore holds the record's claim.
	Rebind(ctx context.Context, key, from string, b Binding) (*Record, error)
}

var (
	// ErrNameTaken: a Rebind would move a record onto a name another
	// record holds.
	ErrNameTaken = errors.New("keystore: the name is held by another record")
	// ErrClaimed: another live worker holds the record's claim, so it
	// cannot be rebound now; try again once that worker is done.
	ErrClaimed = errors.New("keystore: another worker holds the record's claim")
)

// IsNamesake reports whether r is stored under the business name name:
// under name itself, or under name scoped by r's own principal.
func IsNamesake(r *Record, name string) bool {
	if name == "" || r == nil {
		return false
	}
	return r.Name == name || (r.Principal != "" && r.Name == ScopedName(name, r.Principal))
}

// rebound is r bound to b.
func rebound(r *Record, b Binding) *Record {
	out := r.Clone()
	out.Name, out.Principal = b.Name, b.Principal
	out.SecretHeaders = append([]string(nil), b.SecretHeaders...)
	if len(b.SecretHeaders) == 0 {
		out.SecretHeaders = nil
	}
	return out
}

// checkRebind validates the arguments of Rebind.
func checkRebind(ctx context.Context, key, from string, b Binding) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if key == "" {
		return errNoKey
	}
	if from == "" || b.Name == "" {
		return errors.New("keystore: rebind: only a named record can be rebound, to a name")
	}
	return nil
}

// CheckRebind is checkRebind for stores in other packages.
func CheckRebind(ctx context.Context, key, from string, b Binding) error {
	return checkRebind(ctx, key, from, b)
}

// Rebound is rebound for stores in other packages: a copy of r bound to b.
func Rebound(r *Record, b Binding) *Record { return rebound(r, b) }
