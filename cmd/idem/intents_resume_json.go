package main

import (
	"encoding/json"
	"io"

	"github.com/idemkit/idem/keystore"
)

// resumeReport is what `idem intents resume --json` prints: one object,
// whatever happened, with the error the exit status comes from.
type resumeReport struct {
	Keystore  string          `json:"keystore"`
	Resumed   int             `json:"resumed"`
	Succeeded int             `json:"succeeded"`
	Failed    int             `json:"failed"`
	Pending   int             `json:"pending"`
	Expired   int             `json:"expired"`
	Refused   int             `json:"refused"`
	Intents   []resumedIntent `json:"intents"`
	Damaged   []damagedJSON   `json:"damaged"`
	Error     string          `json:"error,omitempty"`
}

// resumedIntent is one intent's outcome.
type resumedIntent struct {
	Key    string         `json:"key"`
	Name   string         `json:"name,omitempty"`
	State  keystore.State `json:"state"`
	Status int            `json:"status,omitempty"`
	Error  string         `json:"error,omitempty"`
}

// damagedJSON is a record the keystore could not read.
type damagedJSON struct {
	KeyRef string `json:"key_ref"`
	Why    string `json:"why"`
}

// writeResumeJSON prints the report of a resume and returns the error
// its text form would end with, so the exit status is the same.
func writeResumeJSON(out io.Writer, where string, results []outcome, bad []damaged) error {
	rep := resumeReport{Keystore: where, Resumed: len(results), Intents: []resumedIntent{}, Damaged: []damagedJSON{}}
	for _, r := range results {
		switch r.state {
		case keystore.Succeeded:
			rep.Succeeded++
		case keystore.Failed:
			rep.Failed++
		case keystore.Expired:
			rep.Expired++
		case stateRefused:
			rep.Refused++
		default:
			rep.Pending++
		}
		in := resumedIntent{Key: r.key, Name: r.name, State: r.state, Status: r.status}
		if r.err != nil {
			in.Error = oneLineOf(r.err.Error(), 1<<10)
		}
		rep.Intents = append(rep.Intents, in)
	}
	for _, d := range bad {
		rep.Damaged = append(rep.Damaged, damagedJSON{KeyRef: d.keyRef, Why: oneLineOf(d.why, 200)})
	}
	var err error
	if len(results) > 0 {
		err = summarizeResume(io.Discard, results, len(bad), where)
	} else {
		err = damagedError(len(bad), where)
	}
	if err != nil {
		rep.Error = errorLine(err.Error())
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	if werr := enc.Encode(rep); werr != nil {
		return werr
	}
	return err
}
