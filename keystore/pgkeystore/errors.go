package pgkeystore

import (
	"fmt"
	"strings"

	"github.com/idemkit/idem/keystore"
)

// nameChanged is the error of an Update that tries to rename the record
// with key, in the words of the other stores: a name is bound to its
// intent for life.
func nameChanged(key, stored, given string) error {
	return fmt.Errorf("keystore: update %s: name is immutable (stored %q, given %q)", keystore.KeyRef(key), stored, given)
}

// settled is the error of an Update that keystore.MayRewrite refuses.
func settled(key string, from, to keystore.State) error {
	return fmt.Errorf("update %s: %w (stored %s, given %s)", keystore.KeyRef(key), keystore.ErrSettled, from, to)
}

// oneLine is err with its message on one line: pgx joins the failures of
// a connection to several addresses (localhost's IPv4 and IPv6) with
// newlines, and a keystore error ends up in log lines and a command's
// one-line error. errors.Is and errors.As still see err.
func oneLine(err error) error {
	msg := err.Error()
	if !strings.ContainsAny(msg, "\r\n") {
		return err
	}
	var b strings.Builder
	for _, line := range strings.FieldsFunc(msg, func(r rune) bool { return r == '\n' || r == '\r' }) {
		line = strings.Join(strings.Fields(line), " ")
		switch {
		case line == "":
			continue
		case b.Len() == 0:
		case strings.HasSuffix(b.String(), ":"):
			b.WriteString(" ")
		default:
			b.WriteString("; ")
		}
		b.WriteString(line)
	}
	return &oneLineError{msg: b.String(), err: err}
}

type oneLineError struct {
	msg string
	err error
}

func (e *oneLineError) Error() string { return e.msg }
func (e *oneLineError) Unwrap() error { return e.err }
