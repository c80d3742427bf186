package main

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/idemkit/idem/internal/testserver"
)

// plainMaxBody is the reference server's body limit, so both refuse the
// same bodies.
const plainMaxBody = testserver.DefaultMaxBody

var plainCurrency = regexp.MustCompile(`^[A-Z]{3}$`)

// plainPayment is the body a plain handler decodes with encoding/json.
// Pointers tell a missing member from a zero one.
type plainPayment struct {
	Amount    *int64  `json:"amount"`
	Currency  *string `json:"currency"`
	Reference *string `json:"reference"`
}

// plainPaymentsHandler is what a Go developer would write for POST
// /v1/payments with net/http and encoding/json alone: the same checks as
// the reference handler (bearer token, JSON media type, body limit,
// unknown members, an integer amount from 1, a three-letter currency, a
// reference of at most 128 characters without control characters, valid
// UTF-8) and the same effect in the same store, answered with the
// payment as JSON. It is the baseline the reference handler's own cost
// is compared with.
func plainPaymentsHandler(store testserver.Store) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/payments", func(w http.ResponseWriter, r *http.Request) {
		principal, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || principal == "" {
			plainError(w, http.StatusUnauthorized, "a bearer token is required")
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			plainError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
			return
		}
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, plainMaxBody))
		dec.DisallowUnknownFields()
		var req plainPayment
		if err := dec.Decode(&req); err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				plainError(w, http.StatusRequestEntityTooLarge, "the request body is too large")
				return
			}
			plainError(w, http.StatusBadRequest, "malformed JSON: "+err.Error())
			return
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			plainError(w, http.StatusBadRequest, "unexpected data after the JSON object")
			return
		}
		if msg := validatePlain(req); msg != "" {
			plainError(w, http.StatusBadRequest, msg)
			return
		}
		p := testserver.Payment{
			ID:        "pay_" + strings.ToLower(rand.Text()[:24]),
			Principal: principal,
			Amount:    *req.Amount,
			Currency:  *req.Currency,
			Status:    "succeeded",
			Created:   time.Now().UTC(),
		}
		if req.Reference != nil {
			p.Reference = *req.Reference
		}
		if err := store.CreatePayment(r.Context(), p, nil); err != nil {
			plainError(w, http.StatusServiceUnavailable, "the store is unavailable")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "/v1/payments/"+p.ID)
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(p)
	})
	return mux
}

// validatePlain returns what is wrong with req, or "".
func validatePlain(req plainPayment) string {
	switch {
	case req.Amount == nil || *req.Amount < 1:
		return "amount must be an integer from 1"
	case req.Currency == nil || !plainCurrency.MatchString(*req.Currency):
		return "currency must be three upper-case letters"
	case req.Reference == nil:
		return ""
	case !utf8.ValidString(*req.Reference):
		return "reference must be valid UTF-8"
	case utf8.RuneCountInString(*req.Reference) > 128:
		return "reference must be at most 128 characters"
	case strings.ContainsFunc(*req.Reference, unicode.IsControl):
		return "reference must not contain control characters"
	}
	return ""
}

// plainError answers a short JSON error.
func plainError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
