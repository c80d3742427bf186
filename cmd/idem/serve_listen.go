package main

import (
	"log/slog"
	"net/http"
	"time"
)

// defaultAdminAddr is where the admin API listens unless told: loopback,
// on a port of its own, so exposing --addr does not expose it.
const defaultAdminAddr = "127.0.0.1:8081"

// adminOnPublic as --admin-addr serves the admin API on --addr, for
// clients such as idem check that find it beside the payments API.
const adminOnPublic = "public"

// newHTTPServer returns the HTTP server of one listener.
func newHTTPServer(h http.Handler, f serveFlags, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}
