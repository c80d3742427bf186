package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/idemkit/idem/keystore"
)

// reportDamaged prints, for a partial result of List, one line per damaged
// record named by err on w ("damaged record KEY (NAME): why"), and returns
// the error the command ends with: non-nil whenever a record was left out,
// so a script never takes a partial listing for a whole one. It points at
// `idem intents repair`. Other errors are returned as they are; nil stays
// nil.
func reportDamaged(ctx context.Context, w io.Writer, st keystore.Store, where string, err error) error {
	var damaged *keystore.CorruptRecordsError
	if !errors.As(err, &damaged) {
		return err
	}
	for i, key := range damaged.Keys {
		fmt.Fprintf(w, "damaged record %s: %s\n", damagedLabel(ctx, st, key), damagedWhy(key, damaged.Errs[i]))
	}
	n := len(damaged.Keys)
	return failedf("%d damaged %s in %s left out (above); the rest is sound. See what is left of %s and replace %s by a placeholder that keeps %s key and name: %s",
		n, plural(n, "record", "records"), where, plural(n, "it", "each"), plural(n, "it", "each"), plural(n, "its", "their"),
		repairHint(damaged.Keys[0], n))
}

// repairHint is the command line that repairs the damaged record under
// key (the first of n).
func repairHint(key string, n int) string {
	hint := "idem intents repair " + shownKey(key) + " --export FILE --yes"
	if n > 1 {
		hint += ", and so for each"
	}
	return hint
}

// damagedLabel names a damaged record as the other commands name intents:
// its key (shownKey) and, where the keystore binds one to it, its business
// name, read through keystore.DamageRepairer.
func damagedLabel(ctx context.Context, st keystore.Store, key string) string {
	label := shownKey(key)
	if dr, ok := st.(keystore.DamageRepairer); ok {
		if d, err := dr.Damaged(ctx, key); err == nil && d.BusinessName() != "" {
			label += " (" + oneLineOf(d.BusinessName(), 80) + ")"
		}
	}
	return label
}

// shownKey is key as the commands print it, when it is one printable word
// of at most 200 characters; else its key# reference (keystore.KeyRef),
// which `idem intents repair` also takes: a damaged key may hold any
// bytes.
func shownKey(key string) string {
	if key == "" || len(key) > 200 || !printable([]byte(key)) || strings.IndexFunc(key, unicode.IsSpace) >= 0 {
		return keystore.KeyRef(key)
	}
	return key
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

// lookupError is the error of a command that looked an intent up by
// keyOrName and met err: no such intent, several of that name, or a
// damaged one are findings (exit status 1), each saying what to do; any
// other error is a keystore that could not be read (exit status 2).
func (env *intentsEnv) lookupError(keyOrName string, err error) error {
	var ambiguous *ambiguousNameError
	var damaged *keystore.CorruptRecordsError
	switch {
	case errors.Is(err, keystore.ErrNotFound):
		return failedf("no intent with key or name %q in %s", keyOrName, env.ks.display())
	case errors.As(err, &ambiguous):
		return failed(err)
	case errors.As(err, &damaged):
		return failedf("no readable intent with key or name %q in %s, and %d damaged %s could not be read (one may be it): see `idem intents list`, then %s",
			keyOrName, env.ks.display(), len(damaged.Keys), plural(len(damaged.Keys), "record", "records"), repairHint(damaged.Keys[0], len(damaged.Keys)))
	case errors.Is(err, keystore.ErrCorrupt):
		return failedf("intent %q in %s is damaged: %s; see what is left of it and replace it by a placeholder that keeps its key and name: %s",
			keyOrName, env.ks.display(), damagedWhy(keyOrName, err), repairHint(keyOrName, 1))
	}
	return fmt.Errorf("reading %s: %w", env.ks.display(), err)
}
