package main

import "github.com/spf13/cobra"

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
protocol, checks other servers against it, and manages client keystores.`,
		SilenceUsage: true,
	}
	root.AddCommand(
		newServeCommand(getenv),
		newCheckCommand(),
		newIntentsCommand(getenv),
		newVersionCommand(),
	)
	return root
}
