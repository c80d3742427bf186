package testserver

import (
	"net/http"
	"strconv"
	"time"

	"github.com/idemkit/idem/server"
)

// serverOptions returns the options that make package server speak d:
// where the key travels, the answer writers and the replay rules. The
// retention and 5xx rule are the caller's (New applies the dialect's
// unless told otherwise).
func (d Dialect) serverOptions() []server.Option {
	opts := []server.Option{server.WithAnswers(dialectAnswers{&d})}
	if d.splitKey != nil {
		opts = append(opts, server.WithBodyKey(d.splitKey))
	} else if d.KeyField != "" {
		opts = append(opts, server.WithBodyKey(func(body []byte) (string, []byte, error) {
			return server.SplitKeyField(body, d.KeyField, d.MaxKeyLength)
		}))
	} else {
		parse := d.parseKey
		if parse == nil {
			parse = plainHeaderKey
		}
		opts = append(opts, server.WithKeyHeader(d.KeyHeader, func(values []string) (string, error) {
			return parse(&d, values)
		}))
	}
	if !d.RequireKey {
		opts = append(opts, server.WithOptionalKey())
	}
	if d.echoKey {
		opts = append(opts, server.WithKeyEcho())
	}
	if d.ReplayMismatch {
		opts = append(opts, server.WithReplayOnMismatch())
	}
	return opts
}

// dialectAnswers is server.Answers written by a dialect's writers.
type dialectAnswers struct{ d *Dialect }

func (a dialectAnswers) MissingKey(w http.ResponseWriter, err error) { a.d.missingKey(w, err) }
func (a dialectAnswers) InvalidKey(w http.ResponseWriter, err error) { a.d.invalidKey(w, err) }
func (a dialectAnswers) InProgress(w http.ResponseWriter, retryAfter time.Duration) {
	a.d.inProgress(w, retryAfter)
}
func (a dialectAnswers) KeyReused(w http.ResponseWriter)        { a.d.keyReused(w) }
func (a dialectAnswers) StoreUnavailable(w http.ResponseWriter) { a.d.storeUnavailable(w) }
func (a dialectAnswers) Replayed(h http.Header, status int) int { return a.d.replayed(h, status) }

// StoreFull implements server.StoreFullAnswers: the dialect's store
// unavailable answer, with the full store's Retry-After.
func (a dialectAnswers) StoreFull(w http.ResponseWriter, retryAfter time.Duration) {
	a.d.storeUnavailable(retryAfterWriter{ResponseWriter: w, seconds: strconv.FormatInt(int64((retryAfter+time.Second-1)/time.Second), 10)})
}

// retryAfterWriter sets Retry-After to seconds as the answer's header is
// written, whatever the writer before it set.
type retryAfterWriter struct {
	http.ResponseWriter
	seconds string
}

func (w retryAfterWriter) WriteHeader(status int) {
	w.Header().Set("Retry-After", w.seconds)
	w.ResponseWriter.WriteHeader(status)
}

// newIdempotency is package server's layer speaking d over store, keys
// scoped by the keyed hash of the bearer token (the process's key unless
// opts give a principal), requests without one anonymous by choice; opts
// come after the dialect's and win.
func newIdempotency(store server.Store, d Dialect, opts ...server.Option) *server.Middleware {
	all := append(d.serverOptions(), server.WithPrincipal(server.BearerPrincipal(processPrincipalKey())), server.WithAnonymous())
	m, err := server.New(store, append(all, opts...)...)
	if err != nil {
		panic(err) // unreachable: a store and a principal are always given
	}
	return m
}
