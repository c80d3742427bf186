package main

import (
	"fmt"
	"io"
	"time"
)

// kindOneCommit is the reference server in one-commit mode
// (testserver.WithOneCommit): the key's record, the payment and the
// answer in one transaction. Only Postgres can.
const kindOneCommit = "onecommit"

// extraKinds are the contenders a store has beyond unprotected and
// protected.
func extraKinds(store string) []string {
	if store == "postgres" {
		return []string{kindOneCommit}
	}
	return nil
}

// reportOneCommit adds the one-commit server against the unprotected
// handler and against the protected server, per store that has it.
func reportOneCommit(out io.Writer, cfg config, cs []*contender, results [][]round) {
	throughput := func(a, b round) float64 { return a.perSecond / b.perSecond }
	cpuDiff := func(a, b round) float64 { return float64(a.cpuPerRequest-b.cpuPerRequest) / float64(time.Microsecond) }
	for _, store := range cfg.stores {
		o := find(cs, kindOneCommit, store, false)
		if o < 0 {
			continue
		}
		for _, kind := range []string{kindUnprotected, kindProtected} {
			if b := find(cs, kind, store, false); b >= 0 {
				fmt.Fprintf(out, "| %s / %s | **%s** | %s |\n", cs[o].name(), cs[b].name(),
					spreadOf(perRound(results[o], results[b], throughput)).format("%.2f"),
					spreadOf(perRound(results[o], results[b], cpuDiff)).format("%+.1f"))
			}
		}
	}
}
