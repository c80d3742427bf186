package testserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemkit/idem/server"
)

// Routes the idempotency layer guards; they are also the route part of a
// key's scope.
const (
	routePayments = "/v1/payments"
	routePayouts  = "/v1/payouts"
)

// Server is the reference server: the payments API behind the
// idempotency layer, with fault injection. Serve its Handler with any
// http.Server; Close it when done.
type Server struct {
	handler   http.Handler
	admin     http.Handler // nil without an admin token
	store     Store
	ownsStore bool
	dialect   Dialect
	retention time.Duration
	faults    *Faults
	guarded   atomic.Int64
	principal server.PrincipalFunc // the layer's (layerPrincipal)
	inventory *shopifyInventory    // the Shopify endpoint's quantities
	accounts  accountBook          // nil without WithAccounts

	stopSweeper context.CancelFunc
	sweeperDone chan struct{}
	closeOnce   sync.Once
	closeErr    error
}

// config holds the options of New.
type config struct {
	store         Store
	clock         func() time.Time
	lease         time.Duration
	storeTimeout  time.Duration
	retention     time.Duration
	store5xx      bool
	maxBody       int64
	logger        *slog.Logger
	payoutDelay   time.Duration
	adminToken    string
	adminApart    bool
	crash         func()
	sweepInterval time.Duration
	dialectName   string
	// memRecords and memBytes bound the default memory store (0: its
	// defaults).
	memRecords int
	memBytes   int64
	// principalKey keys the principal's HMAC (nil: processPrincipalKey).
	principalKey []byte
	// accounts maps account ids to their bearer tokens (WithAccounts;
	// nil: every token is its own principal).
	accounts map[string][]string
	// retentionSet and store5xxSet say the option was given, so the
	// dialect's defaults do not override it.
	retentionSet, store5xxSet bool
	// oneCommit guards the payment routes in one-commit mode (WithOneCommit).
	oneCommit bool
}

// Option configures New.
type Option func(*config)

// WithStore makes the server keep its records and payments in s, which
// the caller owns and closes. The default is a new MemoryStore, which
// Close closes.
func WithStore(s Store) Option { return func(c *config) { c.store = s } }

// WithServerClock makes the server read time from now: payment and
// operation times, and when a payout settles. The default memory store
// reads the same clock; a store given with WithStore keeps its own.
func WithServerClock(now func() time.Time) Option { return func(c *config) { c.clock = now } }

// WithServerLease sets the idempotency lease (default DefaultLease).
func WithServerLease(d time.Duration) Option { return func(c *config) { c.lease = d } }

// WithServerStoreTimeout bounds each store call of the idempotency layer,
// and the transaction that commits a payment with its key (default
// server.DefaultStoreTimeout); see server.WithStoreTimeout. The lease
// must last server.MinLease of it.
func WithServerStoreTimeout(d time.Duration) Option { return func(c *config) { c.storeTimeout = d } }

// WithServerRetention sets how long completed keys are replayed (default:
// the dialect's retention, else DefaultRetention).
func WithServerRetention(d time.Duration) Option {
	return func(c *config) { c.retention, c.retentionSet = d, true }
}

// WithServerStore5xx makes 5xx answers final and replayed instead of
// releasing the key; a 503 is never final (see WithStore5xx).
func WithServerStore5xx(store bool) Option {
	return func(c *config) { c.store5xx, c.store5xxSet = store, true }
}

// WithServerDialect makes the server speak the idempotency dialect called
// name (see DialectNames; default DefaultDialect): where the key travels
// and how each protocol answer looks. The payments API is the same in
// every dialect. The dialect's retention and 5xx rule apply unless
// WithServerRetention or WithServerStore5xx say otherwise. An unknown name
// makes New fail, listing the known ones.
func WithServerDialect(name string) Option { return func(c *config) { c.dialectName = name } }

// WithServerMaxBody sets the largest request body accepted (default
// DefaultMaxBody); larger ones are answered 413.
func WithServerMaxBody(n int64) Option { return func(c *config) { c.maxBody = n } }

// WithServerLogger sets where the server logs; nil, the default, is
// silent.
func WithServerLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// WithPayoutDelay sets how long a payout stays pending (default
// DefaultPayoutDelay; 0 settles at once).
func WithPayoutDelay(d time.Duration) Option { return func(c *config) { c.payoutDelay = d } }

// WithAdminToken enables /admin/faults for requests carrying
// "Authorization: Bearer <token>". Without it the endpoint does not
// exist (404).
func WithAdminToken(token string) Option { return func(c *config) { c.adminToken = token } }

// WithSeparateAdmin keeps /admin/faults off Handler: only AdminHandler
// serves it, so it can listen where the public cannot reach it.
func WithSeparateAdmin() Option { return func(c *config) { c.adminApart = true } }

// WithCrashHook gives /admin/faults the function its crash_after_commit
// fault calls after the commit (see Faults.CrashAfterCommit); the
// command-line server passes one that kills its own process. Without it,
// the default, the endpoint refuses to arm that fault: the library never
// ends the process on its own.
func WithCrashHook(crash func()) Option { return func(c *config) { c.crash = crash } }

// WithSweepInterval sets how often expired keys are purged (default
// DefaultSweepInterval).
func WithSweepInterval(d time.Duration) Option { return func(c *config) { c.sweepInterval = d } }

// WithMemoryCapacity bounds the default memory store (see
// server.WithCapacity): at most records idempotency records of at most
// bytes bytes, and as many payments and operations; past that, new keys
// and new payments are refused with 503. Zero keeps a default
// (server.DefaultMaxRecords, server.DefaultMaxBytes). It does not apply
// to a store given with WithStore.
func WithMemoryCapacity(records int, bytes int64) Option {
	return func(c *config) { c.memRecords, c.memBytes = records, bytes }
}

// New assembles a reference server and starts its sweeper. Invalid
// options are an error.
func New(opts ...Option) (*Server, error) {
	cfg := config{
		clock:         time.Now,
		lease:         DefaultLease,
		storeTimeout:  server.DefaultStoreTimeout,
		retention:     DefaultRetention,
		maxBody:       DefaultMaxBody,
		payoutDelay:   DefaultPayoutDelay,
		sweepInterval: DefaultSweepInterval,
		dialectName:   DefaultDialect,
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	dialect, dialectErr := LookupDialect(cfg.dialectName)
	if dialectErr == nil {
		cfg.applyDialectDefaults(dialect)
	}
	var accounts accountBook
	var accountsErr error
	if cfg.accounts != nil {
		accounts, accountsErr = newAccountBook(cfg.accounts)
	}
	if err := cfg.validate(errors.Join(dialectErr, accountsErr)); err != nil {
		return nil, err
	}
	if err := cfg.checkOneCommit(); err != nil {
		return nil, err
	}
	if cfg.logger == nil {
		cfg.logger = slog.New(slog.DiscardHandler)
	}
	if cfg.principalKey == nil {
		cfg.principalKey = processPrincipalKey()
	}
	s := &Server{store: cfg.store, faults: &Faults{}, dialect: dialect, retention: cfg.retention,
		principal: tokenHeaderPrincipal(dialect.tokenHeader, layerPrincipal(accounts, cfg.principalKey)), accounts: accounts,
		inventory: &shopifyInventory{levels: map[string]int64{}}}
	if s.store == nil {
		s.store = NewMemoryStore(WithClock(cfg.clock), WithReservationGrace(cfg.retention),
			WithCapacity(cfg.memRecords, cfg.memBytes))
		s.ownsStore = true
	}
	s.handler = s.routes(cfg, dialect)
	if cfg.adminToken != "" {
		s.admin = s.adminRoutes(cfg)
	}
	s.startSweeper(cfg)
	return s, nil
}

// applyDialectDefaults gives d's retention and 5xx rule to the options
// that were not set explicitly.
func (c *config) applyDialectDefaults(d Dialect) {
	if !c.retentionSet && d.Retention > 0 {
		c.retention = d.Retention
	}
	if !c.store5xxSet {
		c.store5xx = d.Store5xx
	}
}

// validate rejects options that cannot work, naming the option; optErr
// is what the dialect's lookup and the accounts' check found, if anything.
func (c *config) validate(optErr error) error {
	var errs []error
	if optErr != nil {
		errs = append(errs, optErr)
	}
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %v", name, d))
		}
	}
	positive("lease", c.lease)
	positive("store timeout", c.storeTimeout)
	if c.lease > 0 && c.storeTimeout > 0 {
		if err := server.CheckLease(c.lease, c.storeTimeout); err != nil {
			errs = append(errs, err)
		}
	}
	positive("retention", c.retention)
	positive("sweep interval", c.sweepInterval)
	if c.memRecords < 0 || c.memBytes < 0 {
		errs = append(errs, fmt.Errorf("memory capacity must not be negative, got %d records, %d bytes", c.memRecords, c.memBytes))
	}
	if c.maxBody <= 0 {
		errs = append(errs, fmt.Errorf("max body must be positive, got %d", c.maxBody))
	}
	if c.payoutDelay < 0 {
		errs = append(errs, fmt.Errorf("payout delay must not be negative, got %v", c.payoutDelay))
	}
	if c.clock == nil {
		errs = append(errs, errors.New("clock must not be nil"))
	}
	if c.principalKey != nil && len(c.principalKey) < MinPrincipalKeyLen {
		errs = append(errs, fmt.Errorf("principal key must be at least %d bytes, got %d", MinPrincipalKeyLen, len(c.principalKey)))
	}
	if c.adminToken != "" && !isVisibleASCII(c.adminToken) {
		errs = append(errs, errors.New("admin token must be visible ASCII without spaces"))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("testserver: %w", err)
	}
	return nil
}

func isVisibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// routes builds the mux. Every path answers wrong methods with a 405
// problem and an Allow header; unknown paths get a 404 problem.
func (s *Server) routes(cfg config, dialect Dialect) http.Handler {
	api := &paymentsAPI{
		store:        s.store,
		now:          cfg.clock,
		maxBody:      cfg.maxBody,
		payoutDelay:  cfg.payoutDelay,
		logger:       cfg.logger,
		principal:    orAnonymous(s.principal),
		formBodies:   dialect.formBodies,
		paymentDoc:   dialect.paymentDoc,
		objectFields: dialect.objectFields,
		inventory:    s.inventory,
		// The layer below is given the same principal function.
		heldPrincipal: true,
	}
	// The principal is chosen explicitly: the account under WithAccounts,
	// else the bearer token's keyed hash; no Authorization is anonymous.
	idem := newIdempotency(s.store, dialect, server.WithPrincipal(s.principal), server.WithAnonymous(),
		server.WithLease(cfg.lease), server.WithStoreTimeout(cfg.storeTimeout), server.WithRetention(cfg.retention), server.WithStore5xx(cfg.store5xx),
		server.WithMaxBody(cfg.maxBody), server.WithLogger(cfg.logger))
	auth := s.accounts.authenticated
	guard := func(route string, h http.HandlerFunc) http.Handler {
		inner := auth(s.faults.outside(wrapGuarded(idem, cfg.oneCommit, route, s.faults.inside(h)), cfg.logger))
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.guarded.Add(1)
			inner.ServeHTTP(w, r)
		})
	}

	mux := http.NewServeMux()
	handleMethods(mux, routePayments, map[string]http.Handler{
		http.MethodGet:  auth(http.HandlerFunc(api.listPayments)),
		http.MethodPost: guard(routePayments, api.createPayment),
	})
	handleMethods(mux, routePayments+"/{id}", map[string]http.Handler{
		http.MethodGet: auth(http.HandlerFunc(api.getPayment)),
	})
	handleMethods(mux, routePayouts, map[string]http.Handler{
		http.MethodPost: guard(routePayouts, api.createPayout),
	})
	handleMethods(mux, "/v1/operations/{id}", map[string]http.Handler{
		http.MethodGet: auth(http.HandlerFunc(api.getOperation)),
	})
	if dialect.graphQLRoute != "" {
		handleMethods(mux, dialect.graphQLRoute, map[string]http.Handler{
			http.MethodPost: guard(dialect.graphQLRoute, api.shopifyGraphQL),
		})
	}
	if cfg.adminToken != "" && !cfg.adminApart {
		s.handleAdmin(mux, cfg)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteProblem(w, http.StatusNotFound, ProblemNotFound, "Not found", "no resource at this path", 0)
	})
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// ServeMux answers a "*" request target with a bare 400; every
		// error of this server is a problem document.
		if r.RequestURI == "*" {
			WriteProblem(w, http.StatusBadRequest, ProblemInvalidRequest, "Invalid request target",
				`the request target "*" names no resource`, 0)
			return
		}
		mux.ServeHTTP(w, r)
	})
	if dialect.problemAs != nil {
		h = reshapeProblems(h, dialect.problemAs, dialect.problemHeader)
	}
	if dialect.echoOn != nil {
		h = echoOnly(h, dialect.KeyHeader, dialect.echoOn)
	}
	if dialect.Name != DefaultDialect {
		// Idempotency-Key-Expires is this project's own header; no
		// provider documents it, so a simulator does not send it.
		h = echoOnly(h, server.KeyExpiresHeader, func(int) bool { return false })
	}
	if dialect.wrapAPI != nil {
		h = dialect.wrapAPI(h)
	}
	return h
}

// handleMethods registers one handler per method on path, and a 405
// problem with Allow for every other method. GET also serves HEAD.
func handleMethods(mux *http.ServeMux, path string, handlers map[string]http.Handler) {
	allowed := make([]string, 0, len(handlers)+1)
	for method, h := range handlers {
		mux.Handle(method+" "+path, h)
		allowed = append(allowed, method)
		if method == http.MethodGet {
			allowed = append(allowed, http.MethodHead)
		}
	}
	slices.Sort(allowed)
	allow := strings.Join(allowed, ", ")
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		WriteProblem(w, http.StatusMethodNotAllowed, ProblemMethodNotAllowed, "Method not allowed",
			fmt.Sprintf("%s is not allowed here; allowed: %s", r.Method, allow), 0)
	})
}

// startSweeper purges expired keys in the background until Close.
func (s *Server) startSweeper(cfg config) {
	ctx, cancel := context.WithCancel(context.Background())
	s.stopSweeper = cancel
	s.sweeperDone = make(chan struct{})
	go func() {
		defer close(s.sweeperDone)
		RunSweeper(ctx, s.store, cfg.sweepInterval, DefaultSweepBatch, cfg.logger)
	}()
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// AdminHandler returns the handler of /admin/faults alone, or nil when
// the server has no admin token.
func (s *Server) AdminHandler() http.Handler { return s.admin }

// Faults returns the server's fault injector.
func (s *Server) Faults() *Faults { return s.faults }

// Store returns the store the server uses.
func (s *Server) Store() Store { return s.store }

// Dialect returns the idempotency dialect the server speaks.
func (s *Server) Dialect() Dialect { return s.dialect }

// Retention returns how long the server replays a completed key: the
// option given, else the dialect's, else DefaultRetention.
func (s *Server) Retention() time.Duration { return s.retention }

// GuardedRequests returns how many guarded requests (POST to /v1/payments,
// /v1/payouts and a dialect's GraphQL endpoint) have arrived, faulted ones included: one per attempt.
func (s *Server) GuardedRequests() int { return int(s.guarded.Load()) }

// InventoryAdjustments returns how many inventory adjustment groups the
// Shopify dialect's GraphQL endpoint has made.
func (s *Server) InventoryAdjustments() int {
	s.inventory.mu.Lock()
	defer s.inventory.mu.Unlock()
	return s.inventory.groups
}

// Close stops the sweeper and closes the store if New created it. A store
// given with WithStore stays open. Close is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.stopSweeper()
		<-s.sweeperDone
		if s.ownsStore {
			s.closeErr = s.store.Close()
		}
	})
	return s.closeErr
}
