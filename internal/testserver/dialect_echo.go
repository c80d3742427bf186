package testserver

import "net/http"

// echoOnly removes header from every answer next writes whose status keep
// refuses: for a provider that documents its key echo on some answers
// only, the others carry none.
func echoOnly(next http.Handler, header string, keep func(status int) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&echoFilter{ResponseWriter: w, header: header, keep: keep}, r)
	})
}

// echoFilter drops header as the answer's status is written.
type echoFilter struct {
	http.ResponseWriter
	header  string
	keep    func(status int) bool
	written bool
}

func (w *echoFilter) WriteHeader(status int) {
	if !w.written && !informational(status) {
		w.written = true
		if !w.keep(status) {
			w.Header().Del(w.header)
		}
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *echoFilter) Write(p []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap returns the writer underneath, for http.ResponseController.
func (w *echoFilter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// informational reports a 1xx status, after which the final one
// still comes.
func informational(status int) bool { return status >= 100 && status < 200 }
