package main

import (
	"fmt"
	"io"
)

// cannotRun reports a run that graded nothing: with --json, as the JSON
// document on out (so stdout always parses); always as an error with
// exitCannotRun.
func (f checkFlags) cannotRun(out io.Writer, baseURL string, err error) error {
	if f.json {
		if werr := writeCheckJSON(out, f.report(baseURL, nil, err.Error())); werr != nil {
			err = fmt.Errorf("%w (and writing the report: %v)", err, werr)
		}
	}
	return &exitError{code: exitCannotRun, err: err}
}
