package fleettest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore/pgkeystore"
)

// The environment of a worker process: this test binary run again.
const (
	workerEnv         = "IDEM_FLEETTEST_WORKER" // non-empty: run as a worker
	workerDSNEnv      = "IDEM_FLEETTEST_KEYSTORE"
	workerSchemaEnv   = "IDEM_FLEETTEST_SCHEMA"
	workerTokenEnv    = "IDEM_FLEETTEST_TOKEN"
	workerLeaseEnv    = "IDEM_FLEETTEST_CLAIM_LEASE"
	workerDeadline    = 40 * time.Second
	workerBatch       = 5
	workerIdlePolling = 50 * time.Millisecond
)

// runWorker is a fleet worker's main: it resumes the pending intents of
// the shared keystore, claiming a few at a time, until none is left. It
// prints "settled <key>" for every intent it settled and returns the exit
// code.
func runWorker() int {
	ctx, cancel := context.WithTimeout(context.Background(), workerDeadline)
	defer cancel()
	if err := work(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

func work(ctx context.Context) error {
	lease, err := time.ParseDuration(os.Getenv(workerLeaseEnv))
	if err != nil {
		return fmt.Errorf("%s: %w", workerLeaseEnv, err)
	}
	token := os.Getenv(workerTokenEnv)
	client, err := idem.New(
		idem.WithKeystore(ctx, os.Getenv(workerDSNEnv),
			pgkeystore.WithOptions(&pgkeystore.Options{Schema: os.Getenv(workerSchemaEnv)})),
		idem.WithClaimLease(lease),
		idem.WithRequestEditor(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+token)
			return nil
		}),
		idem.WithBackoffPolicy(func(int) time.Duration { return 20 * time.Millisecond }),
		idem.WithRetryAfterCeiling(100*time.Millisecond),
		idem.WithMaxAttempts(10),
		idem.WithBudget(nil),
	)
	if err != nil {
		return err
	}
	defer client.Close()
	for {
		intents, err := client.ClaimPending(ctx, workerBatch)
		if err != nil {
			return err
		}
		if len(intents) == 0 {
			pending, err := client.Pending(ctx)
			if err != nil {
				return err
			}
			if len(pending) == 0 {
				return nil
			}
			// Pending intents that another worker holds, or held when it
			// died: wait for them to settle or for the claim to run out.
			select {
			case <-time.After(workerIdlePolling):
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		for _, in := range intents {
			if _, err := client.Do(ctx, in); err != nil {
				fmt.Fprintln(os.Stderr, "worker: intent stays pending:", err)
				continue
			}
			fmt.Println("settled", in.Key)
		}
	}
}
