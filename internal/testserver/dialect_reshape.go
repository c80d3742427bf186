package testserver

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"strings"
)

// reshapeProblems makes every problem document next writes (the API's own
// errors, the mux's 404 and 405, injected faults, replays of stored
// problems) the dialect's error document, as shape gives it for the
// problem's status. Other answers pass untouched. The admin API is this
// project's, not the provider's, and keeps its problems.
func reshapeProblems(next http.Handler, shape func(status int, p Problem) any) http.Handler {
	return reshapeProblemsWith(next, func(w http.ResponseWriter, status int, p Problem) {
		writeJSONError(w, status, shape(status, p))
	})
}

// reshapeProblemsWith is reshapeProblems for a dialect whose errors are
// more than a document per status: write answers the held problem in
// full (status, headers and body).
func reshapeProblemsWith(next http.Handler, write func(w http.ResponseWriter, status int, p Problem)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/admin/") {
			next.ServeHTTP(w, r)
			return
		}
		rw := &problemReshaper{ResponseWriter: w, write: write}
		next.ServeHTTP(rw, r)
		rw.finish()
	})
}

// problemReshaper holds back an answer whose Content-Type is
// application/problem+json until the handler returns, then writes the
// dialect's document instead. Unwrap keeps http.ResponseController (the
// faults' hijack) working through it.
type problemReshaper struct {
	http.ResponseWriter
	write   func(w http.ResponseWriter, status int, p Problem)
	status  int
	holding bool
	body    bytes.Buffer
}

func (w *problemReshaper) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	if mt, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type")); mt == "application/problem+json" {
		w.holding = true
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *problemReshaper) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.holding {
		return w.body.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap returns the writer underneath, for http.ResponseController.
func (w *problemReshaper) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes the held problem as the dialect's document; a body that
// is not a problem after all goes out as it came.
func (w *problemReshaper) finish() {
	if !w.holding {
		return
	}
	var p Problem
	if err := json.Unmarshal(w.body.Bytes(), &p); err != nil {
		w.ResponseWriter.WriteHeader(w.status)
		_, _ = w.ResponseWriter.Write(w.body.Bytes())
		return
	}
	w.write(w.ResponseWriter, w.status, p)
}
