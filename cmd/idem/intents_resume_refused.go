package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

// stateRefused is not a keystore state: it is how resume reports an
// intent the client would not send because its credentials were missing
// or named another principal. The intent itself stays as it was.
const stateRefused keystore.State = "refused"

// refusalText is the message resume prints for an intent the client
// refused for its credentials, "" when err is no such refusal. withheld
// names the intent's origin when --origin kept the credentials from it.
func refusalText(err error, withheld string) string {
	var hint string
	switch {
	case errors.Is(err, idem.ErrCredentialsMismatch):
		return "credentials name another principal than the intent was begun with " +
			"(give the token it was begun with; resume one tenant's intents at a time with --key or --origin)"
	case !errors.Is(err, idem.ErrCredentialsMissing):
		return ""
	case withheld != "":
		hint = "--origin leaves out " + withheld
	default:
		hint = "give --token or --header"
	}
	if name := missingHeader(err); name != "" {
		return fmt.Sprintf("credentials missing: %s (the intent was begun with it; %s)", name, hint)
	}
	return fmt.Sprintf("credentials missing (the intent was begun with credentials; %s)", hint)
}

// markRefused reports o as refused when the client would not send its
// intent for its credentials, with refusalText as its error.
func markRefused(o outcome, withheld string) outcome {
	if msg := refusalText(o.err, withheld); msg != "" {
		o.state, o.err = stateRefused, errors.New(msg)
	}
	return o
}

// missingHeader is the header an ErrCredentialsMissing error names, ""
// if none can be read from it: the text after the sentinel's own starts
// with the header's name.
func missingHeader(err error) string {
	core := strings.TrimPrefix(idem.ErrCredentialsMissing.Error(), "idem: ")
	var name string
	walkErrors(err, func(e error) {
		if e == idem.ErrCredentialsMissing {
			return
		}
		msg := e.Error()
		i := strings.Index(msg, core)
		if i < 0 {
			return
		}
		rest := strings.TrimLeft(msg[i+len(core):], ": ")
		if word, _, _ := strings.Cut(rest, " "); validHeaderName(word) {
			name = word // the deepest wins: it has the least around it
		}
	})
	return name
}

// walkErrors calls fn on err and every error it wraps, outermost first.
func walkErrors(err error, fn func(error)) {
	if err == nil {
		return
	}
	fn(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), fn)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walkErrors(e, fn)
		}
	}
}

// damaged is a record the keystore could not read, left out of a resume.
type damaged struct {
	keyRef, why string
}

// damagedRecords names the records a *keystore.CorruptRecordsError left
// out, or returns nil when err is not one.
func damagedRecords(err error) []damaged {
	var ce *keystore.CorruptRecordsError
	if !errors.As(err, &ce) {
		return nil
	}
	out := make([]damaged, len(ce.Keys))
	for i, k := range ce.Keys {
		out[i] = damaged{keyRef: shownKey(k), why: "unreadable record"}
		if i < len(ce.Errs) && ce.Errs[i] != nil {
			out[i].why = ce.Errs[i].Error()
		}
	}
	return out
}

// printDamaged prints one line per damaged record.
func printDamaged(out io.Writer, recs []damaged) {
	for _, d := range recs {
		fmt.Fprintf(out, "%-9s  %s  %s\n", "damaged", d.keyRef, oneLineOf(d.why, 200))
	}
}
