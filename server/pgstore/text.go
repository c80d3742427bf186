package pgstore

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// checkText rejects what a PostgreSQL text column cannot hold (a NUL byte
// or invalid UTF-8), with a message that names the field, before the
// database answers with a bare encoding error.
func checkText(fields ...string) error {
	for i := 0; i+1 < len(fields); i += 2 {
		name, value := fields[i], fields[i+1]
		if strings.IndexByte(value, 0) >= 0 || !utf8.ValidString(value) {
			return fmt.Errorf("pgstore: %s must be UTF-8 text without NUL bytes", name)
		}
	}
	return nil
}
