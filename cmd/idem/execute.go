package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/pflag"

	"github.com/idemkit/idem/internal/redact"
)

// execute runs the command line args the way the binary does and returns
// its exit status: it prints a failure as one line on stderr, and, when
// --json was asked for and the command printed nothing, the failure as a
// JSON document on stdout.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	code, _ := run(ctx, args, stdout, stderr, getenv)
	return code
}

// run is execute that also returns the command's error, for tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) (int, error) {
	root := newRootCommand(getenv)
	root.SilenceErrors = true // printed here, on one line
	// No output shows a store's password: stdout is data, so only shapes
	// are hidden there; stderr also loses the given credentials' values.
	secrets := outputSecrets(args, getenv)
	stdout = redactWriter{w: stdout}
	stderr = redactWriter{w: stderr, secrets: secrets}
	out := &countingWriter{w: stdout}
	root.SetOut(out)
	root.SetErr(stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK, nil
	}
	code := exitCodeOf(err)
	msg := redact.Scrub(redact.Text(errorLine(err.Error())), secrets)
	if out.n == 0 && cmd != nil && wantsJSON(cmd.Flags().Lookup("json"), args) {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		_ = enc.Encode(failureDocument{Error: msg, ExitCode: code})
	}
	fmt.Fprintln(stderr, "Error: "+msg)
	return code, err
}

// failureDocument is what --json prints for a command that failed before
// it had anything else to print.
type failureDocument struct {
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

// wantsJSON reports whether --json was given: the parsed flag when the
// command's flags were parsed, else (a flag error stopped the parse) the
// word on the command line.
func wantsJSON(flag *pflag.Flag, args []string) bool {
	if flag != nil && flag.Value.String() == "true" {
		return true
	}
	return slices.Contains(args, "--json") || slices.Contains(args, "--json=true")
}

// countingWriter counts the bytes written through it, so execute knows
// whether a command printed its own document.
type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}
