package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/idemkit/idem/keystore"
)

// reportDamaged prints, for a partial result of List, one line per damaged
// record named by err on w ("damaged record KEYREF: why"), and returns the
// error the command ends with: non-nil whenever a record was left out,
// so a script never takes a partial listing for a whole one. Other errors
// are returned as they are; nil stays nil.
func reportDamaged(w io.Writer, where string, err error) error {
	var damaged *keystore.CorruptRecordsError
	if !errors.As(err, &damaged) {
		return err
	}
	for i, key := range damaged.Keys {
		fmt.Fprintf(w, "damaged record %s: %s\n", keystore.KeyRef(key), damagedWhy(key, damaged.Errs[i]))
	}
	n := len(damaged.Keys)
	return failedf("%d damaged %s in %s left out (above); the rest is sound. Repair or remove %s before trusting the listing",
		n, plural(n, "record", "records"), where, plural(n, "it", "them"))
}

// damagedWhy is the reason err gives for the damage of the record stored
// under key, without the words every such error starts with.
func damagedWhy(key string, err error) string {
	why := err.Error()
	if i := strings.LastIndex(why, "record "+keystore.KeyRef(key)); i >= 0 {
		why = strings.TrimPrefix(why[i+len("record "+keystore.KeyRef(key)):], ":")
	}
	why = strings.TrimPrefix(strings.TrimSpace(why), keystore.ErrCorrupt.Error()+": ")
	if why == "" {
		return "damaged"
	}
	return oneLineOf(why, 200)
}
