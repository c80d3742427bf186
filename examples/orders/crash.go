package main

import (
	"fmt"
	"os"
	"syscall"
)

// CrashEnv names a phase boundary at which the process SIGKILLs itself.
// It exists for the crash tests (crash_test.go), which run the service as
// a child process with it set and check that another process finishes
// what the killed one began; leave it unset in real use. The points are
// listed in crashPoints.
const CrashEnv = "IDEM_ORDERS_CRASH_AT"

// crashPoints are the boundaries CrashEnv may name, in the order an order
// crosses them: before and after each commit, each provider call, each
// publish and each consumed message's commit and ack.
var crashPoints = []string{
	"order-before-commit", "order-after-commit", // the order and its charge's intent
	"charge-before-call", "charge-after-call", // the charge at the provider
	"paid-before-commit", "paid-after-commit", // the order paid and its outbox row
	"ship-before-call", "ship-after-call", // the booking at the carrier
	"refund-before-call", "refund-after-call", // the refund of a refused shipment
	"final-before-commit", "final-after-commit", // the order's final state
	"publish-before", "publish-after", // the relay's publish, before the row is marked sent
	"consume-before-commit", "consume-before-ack", // the receipt and its message id's completion
}

// crashAt is the point CrashEnv names, read once.
var crashAt = os.Getenv(CrashEnv)

// crashPoint kills the process with SIGKILL when point is the one CrashEnv
// names, after saying so on stdout: no deferred function runs, no
// transaction commits, no connection closes cleanly.
func crashPoint(point string) {
	if crashAt == "" || crashAt != point {
		return
	}
	fmt.Fprintln(os.Stdout, "killed at", point)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
