package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/spf13/pflag"
)

// defaultAdminAddr is where the admin API listens unless told: loopback,
// on a port of its own, so exposing --addr does not expose it.
const defaultAdminAddr = "127.0.0.1:8081"

// adminOnPublic as --admin-addr serves the admin API on --addr, for
// clients such as idem check that find it beside the payments API.
const adminOnPublic = "public"

// maxHeaderBytes bounds a request's header block; the API needs a few
// hundred bytes.
const maxHeaderBytes = 64 << 10

// serveTimeouts bound how long a connection may hold the server: a slow
// or stalled client is cut off instead of pinning a goroutine and a
// socket forever.
type serveTimeouts struct {
	readHeader, read, write, idle time.Duration
}

// addTimeoutFlags registers the --*-timeout flags of the listeners.
func addTimeoutFlags(fl *pflag.FlagSet, t *serveTimeouts) {
	fl.DurationVar(&t.readHeader, "read-header-timeout", 10*time.Second, "how long a client may take to send a request's headers")
	fl.DurationVar(&t.read, "read-timeout", 30*time.Second, "how long a client may take to send a whole request, body included")
	fl.DurationVar(&t.write, "write-timeout", time.Minute,
		"how long a request may take from its headers to the end of its answer (--handler-delay is added)")
	fl.DurationVar(&t.idle, "idle-timeout", 2*time.Minute, "how long an idle keep-alive connection stays open")
}

func (t serveTimeouts) validate() error {
	var errs []error
	for name, d := range map[string]time.Duration{
		"--read-header-timeout": t.readHeader, "--read-timeout": t.read, "--write-timeout": t.write, "--idle-timeout": t.idle,
	} {
		// 0 would mean "no limit" to net/http: exactly what these exist to prevent.
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %v", name, d))
		}
	}
	return errors.Join(errs...)
}

// newHTTPServer returns the HTTP server of one listener.
func newHTTPServer(h http.Handler, f serveFlags, logger *slog.Logger) *http.Server {
	t := f.timeouts
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.readHeader,
		ReadTimeout:       t.read,
		// A request held by --handler-delay must still be able to answer.
		WriteTimeout:   t.write + f.handlerDelay,
		IdleTimeout:    t.idle,
		MaxHeaderBytes: maxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}
