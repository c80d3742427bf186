package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemkit/idem/internal/testserver"
	"github.com/idemkit/idem/internal/testserver/pgstore"
	"github.com/idemkit/idem/internal/testserver/redisstore"
	"github.com/idemkit/idem/server"
)

// adminTokenEnv names the environment variable that carries the admin
// token, so it need not appear in the process list.
const adminTokenEnv = "IDEM_ADMIN_TOKEN"

// principalKeyEnv names the environment variable that carries the
// principal key, so it need not appear in the process list.
const principalKeyEnv = "IDEM_PRINCIPAL_KEY"

// serveFlags are the flags of `idem serve`.
type serveFlags struct {
	addr            string
	store           string
	storeSchema     string
	storePrefix     string
	redisVolatile   bool
	memRecords      int
	memBytes        int64
	retention       time.Duration
	lease           time.Duration
	storeTimeout    time.Duration
	payoutDelay     time.Duration
	store5xx        bool
	adminToken      string
	principalKey    string
	accounts        []string // --account values, ACCOUNT=TOKEN[,TOKEN…]
	admin           bool
	adminAddr       string
	timeouts        serveTimeouts
	logLevel        string
	shutdownTimeout time.Duration
	dialect         string
	// retentionSet and store5xxSet say the flag was given, so the
	// dialect's defaults do not override it.
	retentionSet, store5xxSet bool

	failNext       int
	failStatus     int
	failRetryAfter time.Duration
	loseNext       int
	resetNext      int
	handlerDelay   time.Duration
	crashAfter     bool
	oneCommit      bool
}

// newServeCommand returns `idem serve`: the reference server.
func newServeCommand(getenv func(string) string) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the reference payments server behind the idempotency protocol",
		Long: `Serve runs the reference server: a payments API whose POST routes require an
Idempotency-Key and follow the idempotency protocol (in the default dialect).

  POST /v1/payments         {"amount":1000,"currency":"EUR","reference":"…"} → 201
  GET  /v1/payments/{id}    GET /v1/payments
  POST /v1/payouts          → 202, poll Location: /v1/operations/{id}

"Authorization: Bearer <token>" names the principal, which is stored only
as an HMAC of the token under --principal-key (or $` + principalKeyEnv + `): give
every replica sharing a store, and every restart, the same key. A memory
store without one uses a random key per process. Every token is then its own
principal: a renewed token is a new scope, where a retry runs again.
--account ACCOUNT=TOKEN[,TOKEN...] (repeatable, or $` + accountsEnv + `, entries
separated by ';') models accounts instead: any of an account's tokens names it,
keys and payments are scoped by account, so a retry under a renewed token is
replayed; other tokens are answered 401. Requests without Authorization share
one principal that no token or account, not even "anonymous", has.

--store says where keys and payments live: "memory" (the default; lost on
exit; bounded by --memory-max-records and --memory-max-bytes, past which
new keys and payments are answered 503 with Retry-After while held keys
still replay), a postgres:// URL (several replicas may share one database and
--store-schema; the payment and its key commit in one transaction), or a
redis:// URL (shared too, but Redis may lose acknowledged writes unless it
runs with appendfsync always). A Redis Cluster is named by any one node
(redis://host:7000, found to be a cluster node) or by several, in
go-redis's cluster form redis://host:7000?addr=host:7001&addr=host:7002;
go-redis options such as read_timeout=2s go in the query. A Redis (any
cluster master) that persists nothing (appendonly no and save "") or whose
maxmemory-policy may evict keys (anything but noeviction: every record has
a TTL, so volatile-* policies evict them too) is refused at start, unless
--redis-allow-volatile says the data is throwaway; a Redis whose CONFIG
command is disabled is used with a warning.

--dialect makes the server speak another provider's idempotency dialect on
the same payments API, simulated from that provider's documentation: where
the key travels, its limits, the error documents, what is replayed and for
how long (` + dialectList + `; default ` + testserver.DefaultDialect + `).
shopify serves Shopify's Admin GraphQL endpoint instead, POST
/admin/api/2026-04/graphql.json, with inventoryAdjustQuantities keyed by an
@idempotent(key:) directive.

Faults can be armed at start with the --fail-next, --lose-next, --reset-next,
--handler-delay and --crash-after-commit flags, and at run time through
/admin/faults, which only --admin (or --admin-addr) turns on, with a token
from --admin-token or ` + adminTokenEnv + `; e.g. {"crash_after_commit":1} kills
the process after the next commit. The admin API listens on --admin-addr
(default ` + defaultAdminAddr + `), apart from the public one; "--admin-addr public"
serves it on --addr instead (for idem check --admin-token). Wrong tokens
are limited to a few a second per address, then answered 429.
SIGINT or SIGTERM drains requests and exits.`,
		Example: `  idem serve
  idem serve --addr 127.0.0.1:9000 --retention 1h --payout-delay 5s
  idem serve --dialect stripe
  idem serve --account acct_1=tok_old,tok_new --account acct_2=tok_b
  IDEM_PRINCIPAL_KEY=$KEY idem serve --store 'postgres://app@db.internal:5432/payments?sslmode=require'
  IDEM_PRINCIPAL_KEY=$KEY idem serve --store redis://127.0.0.1:6379/0 --store-prefix 'staging:'
  IDEM_PRINCIPAL_KEY=$KEY idem serve --store 'redis://10.0.0.1:7000?addr=10.0.0.2:7000&addr=10.0.0.3:7000'
  IDEM_ADMIN_TOKEN=secret idem serve --admin --fail-next 2 --fail-status 503 --fail-retry-after 1s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.adminToken == "" {
				f.adminToken = getenv(adminTokenEnv)
			}
			if f.principalKey == "" {
				f.principalKey = getenv(principalKeyEnv)
			}
			if len(f.accounts) == 0 {
				f.accounts = accountsFromEnv(getenv(accountsEnv))
			}
			// --admin-addr alone is as explicit as --admin.
			f.admin = f.admin || cmd.Flags().Changed("admin-addr")
			f.retentionSet = cmd.Flags().Changed("retention")
			f.store5xxSet = cmd.Flags().Changed("store-5xx")
			return runServe(cmd.Context(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8080", "address to listen on (host:port; port 0 picks a free one)")
	fl.StringVar(&f.store, "store", "memory", "where keys and payments live: "+storeForms)
	fl.StringVar(&f.storeSchema, "store-schema", pgstore.DefaultSchema, "Postgres schema of the store's tables (postgres store only)")
	fl.StringVar(&f.storePrefix, "store-prefix", redisstore.DefaultPrefix, "prefix of every key the store writes (redis store only)")
	fl.BoolVar(&f.redisVolatile, "redis-allow-volatile", false,
		"start on a Redis that persists nothing or may evict keys, logging why it is unsafe (redis store only; tests and throwaway data)")
	fl.IntVar(&f.memRecords, "memory-max-records", server.DefaultMaxRecords,
		"most idempotency records, and most payments, the memory store holds; past it new keys are answered 503 (memory store only)")
	fl.Int64Var(&f.memBytes, "memory-max-bytes", server.DefaultMaxBytes,
		"most bytes of idempotency records the memory store holds; past it new keys are answered 503 (memory store only)")
	fl.StringVar(&f.dialect, "dialect", testserver.DefaultDialect, "idempotency dialect to speak: "+dialectList)
	fl.DurationVar(&f.retention, "retention", testserver.DefaultRetention, "how long completed keys are replayed; unset, the --dialect's figure")
	fl.DurationVar(&f.lease, "lease", testserver.DefaultLease, "how long a key stays reserved before a retry may take it over")
	fl.DurationVar(&f.storeTimeout, "store-timeout", server.DefaultStoreTimeout,
		"bound on each store call and on the transaction that commits a payment with its key; --lease must be at least 3 times it")
	fl.DurationVar(&f.payoutDelay, "payout-delay", testserver.DefaultPayoutDelay, "how long a payout stays pending")
	fl.BoolVar(&f.store5xx, "store-5xx", false, "store 5xx answers as final instead of freeing the key; unset, the --dialect's rule")
	fl.StringVar(&f.principalKey, "principal-key", "",
		"key of the HMAC that turns bearer tokens into stored principals (default $"+principalKeyEnv+
			"; required with a shared --store, the same on every replica; random per process for memory)")
	fl.StringArrayVar(&f.accounts, "account", nil,
		"ACCOUNT=TOKEN[,TOKEN...]: scope keys by account, any of its tokens naming it (repeatable; default $"+accountsEnv+
			", entries separated by ';'); other tokens are refused")
	fl.StringVar(&f.adminToken, "admin-token", "", "bearer token of /admin/faults (default $"+adminTokenEnv+"); needs --admin")
	fl.BoolVar(&f.admin, "admin", false, "serve /admin/faults (it can kill this process) on --admin-addr")
	fl.StringVar(&f.adminAddr, "admin-addr", defaultAdminAddr, `address of the admin API (implies --admin); "public" serves it on --addr`)
	addTimeoutFlags(fl, &f.timeouts)
	fl.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long to drain requests on SIGINT/SIGTERM")
	fl.IntVar(&f.failNext, "fail-next", 0, "answer the next N POST requests with --fail-status before executing them")
	fl.IntVar(&f.failStatus, "fail-status", testserver.DefaultFailStatus, "status of --fail-next answers (400-599)")
	fl.DurationVar(&f.failRetryAfter, "fail-retry-after", 0, "Retry-After of --fail-next answers (0: none)")
	fl.IntVar(&f.loseNext, "lose-next", 0, "execute the next N POST requests, then drop the connection without answering")
	fl.IntVar(&f.resetNext, "reset-next", 0, "reset the connection of the next N POST requests before executing them")
	fl.DurationVar(&f.handlerDelay, "handler-delay", 0, "hold every POST request this long after its key is reserved")
	fl.BoolVar(&f.oneCommit, "one-commit", false,
		"commit each payment's key, payment and answer as one transaction (postgres store only; docs/PROTOCOL.md, one-commit mode)")
	fl.BoolVar(&f.crashAfter, "crash-after-commit", false,
		"kill this process (SIGKILL) right after the next POST request commits its effect, before it answers")
	return cmd
}

// dialectList names the dialects --dialect accepts, for help and errors.
var dialectList = strings.Join(testserver.DialectNames(), ", ")

// validate checks what the flag parser cannot.
func (f serveFlags) validate() error {
	var errs []error
	if _, err := testserver.LookupDialect(f.dialect); err != nil {
		errs = append(errs, fmt.Errorf("invalid --dialect %q: want one of %s", f.dialect, dialectList))
	}
	if kind, err := parseStoreKind(f.store); err != nil {
		errs = append(errs, err)
	} else if f.oneCommit && kind != storePostgres {
		errs = append(errs, fmt.Errorf("--one-commit needs a postgres:// --store: %w", server.ErrOneCommitUnsupported))
	}
	if f.storeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--store-timeout must be positive, got %v", f.storeTimeout))
	} else if f.lease > 0 {
		if err := server.CheckLease(f.lease, f.storeTimeout); err != nil {
			errs = append(errs, fmt.Errorf("--lease and --store-timeout: %w", err))
		}
	}
	if f.memRecords <= 0 || f.memBytes <= 0 {
		errs = append(errs, fmt.Errorf("--memory-max-records and --memory-max-bytes must be positive, got %d and %d", f.memRecords, f.memBytes))
	}
	for name, n := range map[string]int{"--fail-next": f.failNext, "--lose-next": f.loseNext, "--reset-next": f.resetNext} {
		if n < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %d", name, n))
		}
	}
	if _, err := parseAccounts(f.accounts); err != nil {
		errs = append(errs, err)
	}
	if kind, err := parseStoreKind(f.store); err == nil && kind != storeMemory && f.principalKey == "" && len(f.accounts) == 0 {
		errs = append(errs, fmt.Errorf("a shared --store needs --principal-key or $%s (or --account): every replica, and every restart, "+
			"must hash bearer tokens with the same key, or each puts every caller in a new scope where retries run again", principalKeyEnv))
	}
	if f.principalKey != "" && len(f.principalKey) < testserver.MinPrincipalKeyLen {
		errs = append(errs, fmt.Errorf("--principal-key must be at least %d bytes, got %d", testserver.MinPrincipalKeyLen, len(f.principalKey)))
	}
	if f.admin && f.adminToken == "" {
		errs = append(errs, fmt.Errorf("--admin needs a token: --admin-token or $%s", adminTokenEnv))
	}
	if err := f.timeouts.validate(); err != nil {
		errs = append(errs, err)
	}
	if f.failStatus < 400 || f.failStatus > 599 {
		errs = append(errs, fmt.Errorf("--fail-status must be 400-599, got %d", f.failStatus))
	}
	for name, d := range map[string]time.Duration{
		"--fail-retry-after": f.failRetryAfter, "--handler-delay": f.handlerDelay, "--shutdown-timeout": f.shutdownTimeout,
	} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %v", name, d))
		}
	}
	return errors.Join(errs...)
}

// parseLogLevel reads debug, info, warn or error.
func parseLogLevel(s string) (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("invalid --log-level %q (want debug, info, warn or error)", s)
	}
	return level, nil
}

// runServe listens, serves until ctx ends, then drains requests for at
// most the shutdown timeout.
func runServe(ctx context.Context, stderr io.Writer, f serveFlags) error {
	if err := f.validate(); err != nil {
		return err
	}
	level, err := parseLogLevel(f.logLevel)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if f.principalKey != "" {
		// Replicas given one principal key log one key_hash per key.
		if err := server.SetKeyHashSecret(keyHashSecret(f.principalKey)); err != nil {
			return err
		}
	}
	f = f.withDialectDefaults()
	if !f.admin {
		if f.adminToken != "" {
			logger.Warn("admin token ignored: the admin API needs --admin")
		}
		// An inherited token must not turn on an endpoint that can kill us.
		f.adminToken = ""
	}

	store, err := openServeStore(ctx, f, logger)
	if err != nil {
		return err
	}
	if store != nil {
		defer store.Close()
	}
	opts := []testserver.Option{
		testserver.WithServerDialect(f.dialect),
		testserver.WithServerRetention(f.retention),
		testserver.WithServerLease(f.lease),
		testserver.WithServerStoreTimeout(f.storeTimeout),
		testserver.WithPayoutDelay(f.payoutDelay),
		testserver.WithServerStore5xx(f.store5xx),
		testserver.WithAdminToken(f.adminToken),
		testserver.WithCrashHook(killSelf),
		testserver.WithServerLogger(logger),
		testserver.WithMemoryCapacity(f.memRecords, f.memBytes),
	}
	if f.principalKey != "" {
		opts = append(opts, testserver.WithPrincipalKey([]byte(f.principalKey)))
	}
	if f.oneCommit {
		opts = append(opts, testserver.WithOneCommit())
	}
	accounts, _ := parseAccounts(f.accounts) // validated
	if accounts != nil {
		opts = append(opts, testserver.WithAccounts(accounts))
	}
	if store != nil {
		opts = append(opts, testserver.WithStore(store))
	}
	if f.adminAddr != adminOnPublic {
		opts = append(opts, testserver.WithSeparateAdmin())
	}
	srv, err := testserver.New(opts...)
	if err != nil {
		return err
	}
	defer srv.Close()
	armFaults(srv.Faults(), f)

	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", f.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", f.addr, err)
	}
	servers := []*http.Server{newHTTPServer(srv.Handler(), f, logger)}
	listeners := []net.Listener{ln}
	adminAt := ""
	if f.admin && f.adminAddr == adminOnPublic {
		adminAt = ln.Addr().String()
	}
	if h := srv.AdminHandler(); h != nil && f.adminAddr != adminOnPublic {
		adminLn, err := (&net.ListenConfig{}).Listen(ctx, "tcp", f.adminAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listen on --admin-addr %s: %w", f.adminAddr, err)
		}
		adminAt = adminLn.Addr().String()
		servers = append(servers, newHTTPServer(h, f, logger))
		listeners = append(listeners, adminLn)
	}
	// Never the key or a token itself.
	principal := "bearer token, principal key given"
	switch {
	case accounts != nil:
		principal = fmt.Sprintf("account (%d accounts)", len(accounts))
	case f.principalKey == "":
		principal = "bearer token, principal key random for this process"
	}
	logger.Info("listening", "addr", ln.Addr().String(), "store", redactURL(f.store),
		"dialect", f.dialect, "retention", f.retention, "admin", adminAt, "principal", principal)

	served := make(chan error, len(servers))
	for i, s := range servers {
		go func() { served <- s.Serve(listeners[i]) }()
	}
	select {
	case err := <-served:
		for _, s := range servers {
			_ = s.Close()
		}
		return failedf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down", "drain_timeout", f.shutdownTimeout)
	return drain(servers, f.shutdownTimeout, logger)
}

// withDialectDefaults returns f with the dialect's retention and 5xx rule
// in place of the flags that were not given, so the store's reservation
// grace and the log say what the server does. f.dialect is valid.
func (f serveFlags) withDialectDefaults() serveFlags {
	d, err := testserver.LookupDialect(f.dialect)
	if err != nil {
		return f
	}
	if !f.retentionSet && d.Retention > 0 {
		f.retention = d.Retention
	}
	if !f.store5xxSet {
		f.store5xx = d.Store5xx
	}
	return f
}

// drain stops accepting connections and waits for in-flight requests;
// past the timeout it closes the rest.
func drain(servers []*http.Server, timeout time.Duration, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Shutdown(ctx); err != nil {
				_ = s.Close()
				errs[i] = fmt.Errorf("requests still running after %v were cut off: %w", timeout, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return failed(err)
	}
	logger.Info("stopped")
	return nil
}

// armFaults applies the fault flags.
func armFaults(faults *testserver.Faults, f serveFlags) {
	if f.failNext > 0 {
		faults.FailNext(f.failNext, f.failStatus, f.failRetryAfter)
	}
	faults.LoseNextResponses(f.loseNext)
	faults.ResetNext(f.resetNext)
	faults.SetHandlerDelay(f.handlerDelay)
	if f.crashAfter {
		faults.CrashAfterCommit(1, killSelf)
	}
}

// killSelf ends the process at once, as a power cut or an OOM kill would:
// no deferred calls, no drained requests, no answer to the client.
func killSelf() {
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		_ = p.Kill()
	}
	os.Exit(137) // where a process cannot signal itself
}

// keyHashSecret derives the secret of the logs' key hashes from the
// principal key, so that one flag keys both and neither reveals the other.
func keyHashSecret(principalKey string) []byte {
	mac := hmac.New(sha256.New, []byte(principalKey))
	mac.Write([]byte("idem serve key_hash"))
	return mac.Sum(nil)
}
