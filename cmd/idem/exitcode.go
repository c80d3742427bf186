package main

import (
	"errors"
	"fmt"
	"strings"
)

// Exit statuses of every idem command, documented in `idem --help`:
//
//	0  the command did what it was asked; every check passed, every intent settled
//	1  it ran and reports a finding or a failure: a check failed, an intent is
//	   left unsettled, a run needs an operator, a damaged record, no such
//	   intent or run, a verdict refused
//	2  it could not run: bad flags or arguments, a keystore, store or server
//	   that cannot be opened or reached; nothing was done
//
// A command marks the errors that are findings (1) with failed; every
// other error, cobra's usage errors included, exits 2.
const (
	exitOK        = 0
	exitFailed    = 1
	exitCannotRun = 2
)

// exitCodesHelp is the exit-status paragraph of `idem --help`.
const exitCodesHelp = `Exit status, the same for every command:
  0  done: every check passed, every intent settled
  1  it ran and found a failure: a check failed, an intent left unsettled,
     a run that needs an operator, a damaged record, no such intent or
     run, a verdict refused
  2  it could not run: bad flags or arguments, or a keystore, store or
     server that cannot be opened or reached (a resume that reached no
     intent's server); nothing was done

Every failure is one line on stderr. --json, on every command that reports,
prints one JSON document on stdout, a failure included: {"error": "...",
"exit_code": N} when the command had nothing else to print.`

// exitError is an error that asks main for a particular exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }

// ExitCode is the status the process exits with.
func (e *exitError) ExitCode() int { return e.code }

// failed marks err as a finding of a command that ran: exit status 1.
// nil stays nil.
func failed(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: exitFailed, err: err}
}

// failedf is failed(fmt.Errorf(format, args...)).
func failedf(format string, args ...any) error {
	return failed(fmt.Errorf(format, args...))
}

// exitCodeOf is the status the process exits with after err: 0 for nil,
// the status an *exitError asks for, else exitCannotRun.
func exitCodeOf(err error) int {
	if err == nil {
		return exitOK
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	return exitCannotRun
}

// errorLine is an error message on one line: a multi-line message (a joined
// error, a Postgres connection error naming each address it tried, a
// wrapped server answer) has its lines joined with "; ".
func errorLine(msg string) string {
	var b strings.Builder
	for _, line := range strings.Split(msg, "\n") {
		line = strings.Join(strings.Fields(line), " ")
		if line == "" {
			continue
		}
		if b.Len() > 0 {
			if s := b.String(); strings.HasSuffix(s, ":") || strings.HasSuffix(s, ";") {
				b.WriteString(" ") // the line above introduces this one
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(line)
	}
	return b.String()
}
