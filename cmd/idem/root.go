package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// newRootCommand assembles the idem command tree. getenv reads the
// environment (os.Getenv in the binary) so tests can supply their own.
// Each subcommand lives in its own file; add it here.
func newRootCommand(getenv func(string) string) *cobra.Command {
	root := &cobra.Command{
		Use:   "idem",
		Short: "Safe retries for unsafe HTTP calls: reference server, conformance checks, keystore tools",
		Long: `idem makes unsafe HTTP calls (payments, orders) safe to retry with one
Idempotency-Key per business intent.

This command runs the reference server that implements the server side of the
protocol, checks other servers against it, and manages client keystores.

` + exitCodesHelp,
		SilenceUsage: true,
		// cobra's own check of the first word prints a suggestion over
		// several lines; this one keeps it on the error's line.
		Args: unknownSubcommand,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.AddCommand(
		newServeCommand(getenv),
		newCheckCommand(),
		newIntentsCommand(getenv),
		newRunsCommand(getenv),
		newVersionCommand(),
	)
	return root
}

// unknownSubcommand is the Args of a command that only groups others:
// cobra suggests near names for a typo at the top level only, so a typo
// at any level gets the suggestion here, on the error's one line.
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's own default, set only at the top
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return errors.New(msg)
}
