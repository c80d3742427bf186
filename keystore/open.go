package keystore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/idemkit/idem/internal/redact"
)

// OpenOption tunes Open for the kind of keystore the location names.
type OpenOption func(*openConfig)

type openConfig struct {
	bolt     *BoltOptions
	settings map[any]any
}

// WithBoltOptions applies opts when Open opens a bbolt file; it is
// ignored for other locations.
func WithBoltOptions(opts *BoltOptions) OpenOption {
	return func(c *openConfig) { c.bolt = opts }
}

// WithOpenerSetting hands value, under key, to the Opener that Open runs
// for a URL location (see OpenerSettings); bbolt files ignore it. A
// package that registers an Opener offers its own options built on it,
// such as pgkeystore.WithOptions, and uses a key of an unexported type so
// that no other package's setting collides with it.
func WithOpenerSetting(key, value any) OpenOption {
	return func(c *openConfig) {
		if c.settings == nil {
			c.settings = make(map[any]any)
		}
		c.settings[key] = value
	}
}

// Open opens the keystore at location, so one setting can choose between
// a single host's file and a fleet's shared database:
//
//   - a URL opens the keystore of its scheme with the Opener a package
//     registered for it (RegisterOpener): a postgres:// or postgresql://
//     URL opens a Postgres keystore, which implements Claimer;
//   - anything else without a URL scheme is a file path, opened (or
//     created) as a bbolt keystore (OpenBolt).
//
// The Postgres keystore is in its own package, so that programs without
// it do not carry its driver; a program that opens Postgres URLs imports
// it once:
//
//	import _ "github.com/idemkit/idem/keystore/pgkeystore"
//
// Without it, Open of a Postgres URL fails with a *MissingOpenerError
// (ErrNoOpener) naming that import. Any other scheme ("mysql://…",
// "file://…") is an error rather than a strangely named file. Errors
// never show a URL's password.
func Open(ctx context.Context, location string, opts ...OpenOption) (Store, error) {
	var cfg openConfig
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	scheme, err := parseLocation(location)
	if err != nil {
		return nil, err
	}
	if scheme == "" {
		return OpenBolt(location, cfg.bolt)
	}
	open, err := openerFor(scheme, location)
	if err != nil {
		return nil, err
	}
	st, err := open(ctx, location, OpenerSettings{values: cfg.settings})
	if err != nil {
		return nil, fmt.Errorf("keystore %s: %w", RedactLocation(location), err)
	}
	if st == nil {
		return nil, fmt.Errorf("keystore %s: the %s:// opener returned no store", RedactLocation(location), scheme)
	}
	return st, nil
}

// IsPostgresLocation reports whether location is a Postgres URL, which
// Open turns into a Postgres keystore, rather than a file path.
func IsPostgresLocation(location string) bool {
	scheme, err := parseLocation(location)
	return err == nil && (scheme == "postgres" || scheme == "postgresql")
}

// RedactLocation returns location as messages may show it: a URL with its
// password replaced by "xxxxx" and the values of secret query parameters
// (password, sslpassword, …) by "REDACTED"; the password of a libpq
// key=value string too; a path as it is.
func RedactLocation(location string) string {
	return redact.Location(location)
}

// parseLocation returns the lower-cased scheme of a URL location that
// Open can hand to an opener, registered or known, and "" for a file
// path.
func parseLocation(location string) (string, error) {
	if strings.TrimSpace(location) == "" {
		return "", errors.New("keystore: empty location: want a file path or a postgres:// URL")
	}
	scheme, _, isURL := strings.Cut(location, "://")
	if !isURL {
		return "", nil
	}
	scheme = strings.ToLower(scheme)
	if _, known := knownOpeners[scheme]; known || registeredOpener(scheme) != nil {
		return scheme, nil
	}
	return "", fmt.Errorf("keystore: unsupported location %s: want a file path or a postgres:// (postgresql://) URL", RedactLocation(location))
}
