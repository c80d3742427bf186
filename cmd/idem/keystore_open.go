package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/idemkit/idem/keystore"
	"github.com/idemkit/idem/keystore/pgkeystore"
)

// keystoreEnv names the environment variable that gives the keystore when
// --keystore is not set.
const keystoreEnv = "IDEM_KEYSTORE"

// defaultKeystore is the keystore used when neither --keystore nor
// IDEM_KEYSTORE is given: a bbolt file in the working directory.
const defaultKeystore = "idem.db"

// keystoreFlags say which keystore an intents command works on.
type keystoreFlags struct {
	// location is a bbolt file path or a postgres:// (postgresql://) URL.
	location    string
	lockTimeout time.Duration
	// acceptOlderMeta opens a bbolt file with a damaged meta page as of
	// its other one (keystore.BoltOptions.AcceptOlderMeta).
	acceptOlderMeta bool
	// schema and table name a Postgres keystore's table.
	schema, table string
}

// register adds --keystore, --lock-timeout, --keystore-schema and
// --keystore-table to fs. The default location comes from IDEM_KEYSTORE,
// then defaultKeystore.
func (f *keystoreFlags) register(fs *pflag.FlagSet, getenv func(string) string) {
	def := getenv(keystoreEnv)
	if def == "" {
		def = defaultKeystore
	}
	fs.StringVar(&f.location, "keystore", def,
		"bbolt keystore file or postgres:// URL; $"+keystoreEnv+" sets the default")
	fs.DurationVar(&f.lockTimeout, "lock-timeout", keystore.DefaultBoltTimeout,
		"how long to wait for another process to release a bbolt keystore")
	fs.StringVar(&f.schema, "keystore-schema", pgkeystore.DefaultSchema,
		"Postgres schema of the keystore table (postgres:// keystore only)")
	fs.StringVar(&f.table, "keystore-table", pgkeystore.DefaultTable,
		"Postgres table of the keystore (postgres:// keystore only)")
	fs.BoolVar(&f.acceptOlderMeta, "accept-older-meta", false,
		"open a bbolt keystore whose newest meta page is damaged as of its older one (its last commit may be lost; a write makes that final): inspect with list and show first")
}

// validate rejects flag values no keystore can be opened with, before any
// file or database is touched.
func (f keystoreFlags) validate() error {
	if strings.TrimSpace(f.location) == "" {
		return errors.New("--keystore: empty location")
	}
	if f.lockTimeout <= 0 {
		return fmt.Errorf("--lock-timeout %s: need a positive duration", f.lockTimeout)
	}
	if !keystore.IsPostgresLocation(f.location) && (f.schema != pgkeystore.DefaultSchema || f.table != pgkeystore.DefaultTable) {
		return fmt.Errorf("--keystore-schema and --keystore-table name a Postgres keystore's table; %s is a bbolt file", f.location)
	}
	return nil
}

// display is the location as messages show it: a Postgres URL without
// its password.
func (f keystoreFlags) display() string {
	return keystore.RedactLocation(f.location)
}

// open opens the existing keystore the flags name. A bbolt file, or a
// Postgres keystore's schema and table, must exist already: the intents
// commands inspect and repair a keystore that a program wrote, and an
// empty new one would only hide a wrong path or name. A file held by
// another process fails within the lock timeout.
func (f keystoreFlags) open(ctx context.Context) (keystore.Store, error) {
	return f.openMode(ctx, false)
}

// openReadOnly is open for the commands that only read (list, show): a
// bbolt file is opened O_RDONLY under a shared lock and never written,
// not even when closed, so they work on a read-only mount and leave the
// file's bytes as they were.
func (f keystoreFlags) openReadOnly(ctx context.Context) (keystore.Store, error) {
	return f.openMode(ctx, true)
}

func (f keystoreFlags) openMode(ctx context.Context, readOnly bool) (keystore.Store, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	if keystore.IsPostgresLocation(f.location) {
		return f.openExistingPostgres(ctx)
	}
	return openExistingBolt(f.location, &keystore.BoltOptions{
		Timeout: f.lockTimeout, ReadOnly: readOnly, NoCreate: true, AcceptOlderMeta: f.acceptOlderMeta,
	})
}

// closeStore closes st and, when the command has not failed already,
// makes a failed close its error: a close that loses a write is never
// passed over.
func (f keystoreFlags) closeStore(st keystore.Store, err *error) {
	if cerr := st.Close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("closing keystore %s: %w", f.display(), cerr)
	}
}

// openExistingPostgres opens the Postgres keystore the flags name,
// refusing to create its schema or table.
func (f keystoreFlags) openExistingPostgres(ctx context.Context) (keystore.Store, error) {
	st, err := keystore.Open(ctx, f.location, pgkeystore.WithOptions(&pgkeystore.Options{
		Schema: f.schema, Table: f.table, NoCreate: true,
	}))
	if errors.Is(err, pgkeystore.ErrNoKeystore) {
		return nil, &messageError{
			msg: fmt.Sprintf("no idem keystore at schema %s table %s in %s; name an existing one with --keystore-schema and --keystore-table (nothing was created)",
				f.schema, f.table, f.display()),
			err: err,
		}
	}
	return st, err
}

// openExistingBolt opens the bbolt keystore at path, refusing to create
// one, and words the failures an operator meets: a wrong path, a file
// another process holds, a file that is not a keystore.
func openExistingBolt(path string, opts *keystore.BoltOptions) (keystore.Store, error) {
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("keystore %s does not exist; give its path with --keystore or $%s", path, keystoreEnv)
	case err != nil:
		return nil, fmt.Errorf("keystore %s: %w", path, err)
	case info.IsDir():
		return nil, fmt.Errorf("keystore %s is a directory, not a keystore file", path)
	}
	st, err := keystore.OpenBolt(path, opts)
	if errors.Is(err, keystore.ErrLocked) {
		return nil, &messageError{
			msg: fmt.Sprintf("keystore %s is locked: another process holds it (waited %s); let that process finish or raise --lock-timeout",
				path, opts.Timeout),
			err: err,
		}
	}
	if errors.Is(err, keystore.ErrMetaDamaged) {
		return nil, &messageError{
			msg: fmt.Sprintf("keystore %s has a damaged meta page: it would read as of an older commit, and intents of the last one may be missing (%v). "+
				"Restore it from a backup, or see what it holds with `idem intents list --accept-older-meta` before accepting that state",
				path, err),
			err: err,
		}
	}
	if err != nil {
		return nil, err // already names the path and says what is wrong
	}
	return st, nil
}

// messageError shows msg, written for an operator, while errors.Is and
// errors.As still see the error underneath.
type messageError struct {
	msg string
	err error
}

func (e *messageError) Error() string { return e.msg }
func (e *messageError) Unwrap() error { return e.err }
