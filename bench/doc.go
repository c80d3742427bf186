// Package bench holds idem's performance evidence: Go benchmarks that
// measure the client, the keystores and the reference server against the
// baselines a user would pick instead, the simulations behind the
// retry-storm (herd) and outage tables of BENCHMARKS.md, and the storm:
// the same herd and outage over real loopback HTTP, every caller through
// one shared client (RunStorm, RunStormOutage, bench/cmd/storm).
//
// Nothing here asserts a duration: the tests check the simulations'
// logic with fixed seeds and counts; figures come only from `go test
// -bench` and the commands under bench/cmd (see bench/run.sh).
package bench
