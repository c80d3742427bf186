package main

import (
	"fmt"
	"io"
)

// Exit statuses of `idem check`.
const (
	// exitFailed: a check failed (or, with --strict, was skipped).
	exitFailed = 1
	// exitCannotRun: bad flags or arguments, or the server could not be
	// reached: nothing was graded.
	exitCannotRun = 2
)

// exitError is an error that asks main for a particular exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }

// ExitCode is the status the process exits with.
func (e *exitError) ExitCode() int { return e.code }

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
