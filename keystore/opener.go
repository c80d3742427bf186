package keystore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// An Opener opens the keystore at location, a URL whose scheme it was
// registered for (RegisterOpener). settings holds what Open's options
// set for openers (WithOpenerSetting). Open adds the location, password
// redacted, to the errors it returns, so an Opener need not; it must
// never put the password in one.
type Opener func(ctx context.Context, location string, settings OpenerSettings) (Store, error)

// OpenerSettings are the values that Open's options set for the Opener
// of a URL location, each under its key (WithOpenerSetting).
type OpenerSettings struct {
	values map[any]any
}

// Value returns the value set under key, or nil if none was.
func (s OpenerSettings) Value(key any) any {
	return s.values[key]
}

// ErrNoOpener is matched (errors.Is) by the *MissingOpenerError of Open.
var ErrNoOpener = errors.New("keystore: no opener registered for this kind of location")

// MissingOpenerError is Open's error for a URL of a kind of keystore that
// lives in its own package, which the program does not import: the
// Postgres keystore (postgres://, postgresql://) is
// github.com/idemkit/idem/keystore/pgkeystore, kept out of programs that
// do not use it so they do not carry its driver. It matches ErrNoOpener.
type MissingOpenerError struct {
	// Location is the location given to Open, password redacted.
	Location string
	// Kind names the kind of keystore, such as "Postgres".
	Kind string
	// Import is the package whose import registers the opener.
	Import string
}

// Error names the import that makes Open accept the location.
func (e *MissingOpenerError) Error() string {
	return fmt.Sprintf("keystore %s: the %s keystore is not built into this program: add import _ %q", e.Location, e.Kind, e.Import)
}

// Is reports that the error matches ErrNoOpener.
func (e *MissingOpenerError) Is(target error) bool { return target == ErrNoOpener }

// knownOpener is a kind of keystore of this module that registers its
// opener when its package is imported.
type knownOpener struct {
	kind, importPath string
}

// knownOpeners are the schemes whose openers this module provides.
var knownOpeners = map[string]knownOpener{
	"postgres":   {kind: "Postgres", importPath: "github.com/idemkit/idem/keystore/pgkeystore"},
	"postgresql": {kind: "Postgres", importPath: "github.com/idemkit/idem/keystore/pgkeystore"},
}

var openers struct {
	sync.RWMutex
	byScheme map[string]Opener
}

// RegisterOpener makes Open hand URL locations of scheme (such as
// "postgres", matched whatever its case) to open. A package that
// implements a kind of keystore calls it from init, as database/sql
// drivers register themselves, so a program opts in to a keystore and its
// dependencies by importing that package. It panics if scheme is empty or
// holds "://", if open is nil, or if scheme was registered before: each
// is a mistake in the program, not in its input.
func RegisterOpener(scheme string, open Opener) {
	if scheme == "" || strings.Contains(scheme, "://") {
		panic(fmt.Sprintf("keystore: RegisterOpener: invalid scheme %q", scheme))
	}
	if open == nil {
		panic("keystore: RegisterOpener: nil opener for " + scheme)
	}
	scheme = strings.ToLower(scheme)
	openers.Lock()
	defer openers.Unlock()
	if _, dup := openers.byScheme[scheme]; dup {
		panic("keystore: RegisterOpener called twice for " + scheme)
	}
	if openers.byScheme == nil {
		openers.byScheme = make(map[string]Opener)
	}
	openers.byScheme[scheme] = open
}

// registeredOpener returns the Opener registered for scheme, nil if none.
func registeredOpener(scheme string) Opener {
	openers.RLock()
	defer openers.RUnlock()
	return openers.byScheme[scheme]
}

// openerFor returns the Opener for scheme, or the *MissingOpenerError
// naming the package to import.
func openerFor(scheme, location string) (Opener, error) {
	if open := registeredOpener(scheme); open != nil {
		return open, nil
	}
	known := knownOpeners[scheme]
	return nil, &MissingOpenerError{Location: RedactLocation(location), Kind: known.kind, Import: known.importPath}
}
