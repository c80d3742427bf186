package main

import (
	"net/http"
	"strconv"
	"syscall"
)

// cpuPath answers the process's CPU time so far, user plus system, in
// microseconds, so a load generator in another process can divide the
// CPU a round cost by the requests it served.
const cpuPath = "/debug/cpu"

// withCPU serves cpuPath beside h.
func withCPU(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != cpuPath {
			h.ServeHTTP(w, r)
			return
		}
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		us := ru.Utime.Nano()/1000 + ru.Stime.Nano()/1000
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(strconv.AppendInt(nil, us, 10))
	})
}
