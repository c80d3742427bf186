// Package fiberapp is the payments app of bench/cmd/benchserver written
// for Fiber v2: POST /v1/payments with the checks of benchserver's plain
// handler (bearer token, JSON media type, body limit, unknown members, an
// integer amount from 1, a three-letter currency, a reference of at most
// 128 characters without control characters, valid UTF-8), the same effect
// in the same testserver.Store and the same 201 answer (the payment as
// JSON, Location). Protected, Fiber's idempotency middleware sits in front
// of it, configured as its documentation shows, with the key header named
// as the draft names it.
package fiberapp

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/idempotency"
	"github.com/gofiber/fiber/v2/utils"

	"github.com/idemkit/idem/internal/testserver"
)

// KeyHeader is the header the middleware reads the key from: the draft's
// name (Fiber's default is X-Idempotency-Key).
const KeyHeader = "Idempotency-Key"

// New returns the app over store. With guard true, Fiber's idempotency
// middleware guards it, keeping its records in storage (nil: the
// middleware's own in-memory storage); every other setting is the
// middleware's default (in-memory lock, all response headers kept,
// 30 minutes' lifetime).
func New(store testserver.Store, guard bool, storage fiber.Storage) *fiber.App {
	app := fiber.New(fiber.Config{
		DisableStartupMessage: true,
		BodyLimit:             testserver.DefaultMaxBody,
	})
	if guard {
		app.Use(idempotency.New(idempotency.Config{KeyHeader: KeyHeader, Storage: storage}))
	}
	app.Post("/v1/payments", func(c *fiber.Ctx) error { return create(c, store) })
	return app
}

var currency = regexp.MustCompile(`^[A-Z]{3}$`)

// payment is the body, decoded with encoding/json; pointers tell a
// missing member from a zero one.
type payment struct {
	Amount    *int64  `json:"amount"`
	Currency  *string `json:"currency"`
	Reference *string `json:"reference"`
}

// create checks the request and stores the payment. Its answers, errors
// included, are written here and returned as nil, as Fiber handlers
// commonly do, so the middleware stores them all.
func create(c *fiber.Ctx, store testserver.Store) error {
	// Fiber's strings point into buffers it reuses: the principal outlives
	// the request in a memory store, so it is copied.
	principal, ok := strings.CutPrefix(utils.CopyString(c.Get(fiber.HeaderAuthorization)), "Bearer ")
	if !ok || principal == "" {
		return answerError(c, fiber.StatusUnauthorized, "a bearer token is required")
	}
	if mt, _, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType)); err != nil || mt != fiber.MIMEApplicationJSON {
		return answerError(c, fiber.StatusUnsupportedMediaType, "Content-Type must be application/json")
	}
	dec := json.NewDecoder(bytes.NewReader(c.Body()))
	dec.DisallowUnknownFields()
	var req payment
	if err := dec.Decode(&req); err != nil {
		return answerError(c, fiber.StatusBadRequest, "malformed JSON: "+err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return answerError(c, fiber.StatusBadRequest, "unexpected data after the JSON object")
	}
	if msg := validate(req); msg != "" {
		return answerError(c, fiber.StatusBadRequest, msg)
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
	if err := store.CreatePayment(c.UserContext(), p, nil); err != nil {
		return answerError(c, fiber.StatusServiceUnavailable, "the store is unavailable")
	}
	c.Set(fiber.HeaderLocation, "/v1/payments/"+p.ID)
	return c.Status(fiber.StatusCreated).JSON(p)
}

// validate returns what is wrong with req, or "".
func validate(req payment) string {
	switch {
	case req.Amount == nil || *req.Amount < 1:
		return "amount must be an integer from 1"
	case req.Currency == nil || !currency.MatchString(*req.Currency):
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

// answerError answers a short JSON error.
func answerError(c *fiber.Ctx, status int, msg string) error {
	return c.Status(status).JSON(fiber.Map{"error": msg})
}
