package keystore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// OpenOption tunes Open for the kind of keystore the location names.
type OpenOption func(*openConfig)

type openConfig struct {
	bolt     *BoltOptions
	postgres *PostgresOptions
}

// WithBoltOptions applies opts when Open opens a bbolt file; it is
// ignored for other locations.
func WithBoltOptions(opts *BoltOptions) OpenOption {
	return func(c *openConfig) { c.bolt = opts }
}

// WithPostgresOptions applies opts when Open opens a Postgres keystore; it
// is ignored for other locations.
func WithPostgresOptions(opts *PostgresOptions) OpenOption {
	return func(c *openConfig) { c.postgres = opts }
}

// Open opens the keystore at location, so one setting can choose between
// a single host's file and a fleet's shared database:
//
//   - a postgres:// or postgresql:// URL opens a Postgres keystore
//     (OpenPostgres), which implements Claimer;
//   - anything else without a URL scheme is a file path, opened (or
//     created) as a bbolt keystore (OpenBolt).
//
// Any other scheme ("mysql://…", "file://…") is an error rather than a
// strangely named file. Errors never show a URL's password.
func Open(ctx context.Context, location string, opts ...OpenOption) (Store, error) {
	var cfg openConfig
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	kind, err := parseLocation(location)
	if err != nil {
		return nil, err
	}
	if kind == locationPostgres {
		st, err := OpenPostgres(ctx, location, cfg.postgres)
		if err != nil {
			return nil, fmt.Errorf("keystore %s: %w", RedactLocation(location), err)
		}
		return st, nil
	}
	return OpenBolt(location, cfg.bolt)
}

// IsPostgresLocation reports whether location is a Postgres URL, which
// Open turns into a Postgres keystore, rather than a file path.
func IsPostgresLocation(location string) bool {
	kind, err := parseLocation(location)
	return err == nil && kind == locationPostgres
}

// RedactLocation returns location as messages may show it: a URL with its
// password replaced, a path as it is.
func RedactLocation(location string) string {
	if !strings.Contains(location, "://") {
		return location
	}
	u, err := url.Parse(location)
	if err != nil {
		return "(unparsable keystore URL)"
	}
	return u.Redacted()
}

type locationType int

const (
	locationBolt locationType = iota
	locationPostgres
)

func parseLocation(location string) (locationType, error) {
	if strings.TrimSpace(location) == "" {
		return 0, errors.New("keystore: empty location: want a file path or a postgres:// URL")
	}
	scheme, _, isURL := strings.Cut(location, "://")
	if !isURL {
		return locationBolt, nil
	}
	switch strings.ToLower(scheme) {
	case "postgres", "postgresql":
		return locationPostgres, nil
	}
	return 0, fmt.Errorf("keystore: unsupported location %s: want a file path or a postgres:// (postgresql://) URL", RedactLocation(location))
}
