// Package fiberpay is a small payments API on Fiber v2 guarded by Fiber's
// own idempotency middleware (github.com/gofiber/fiber/v2/middleware/idempotency),
// configured as its documentation shows, for `idem check` to grade: POST
// /v1/payments creates a payment, GET /v1/payments lists the caller's,
// GET /v1/payments/:id reads one. The caller is the bearer token of
// Authorization.
package fiberpay

import (
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/idempotency"
	"github.com/gofiber/fiber/v2/utils"

	"github.com/idemkit/idem/internal/checkpeers/ledger"
)

// KeyHeader is the header the middleware reads the key from: the draft's
// name. Fiber's default is X-Idempotency-Key (middleware/idempotency/config.go:60).
const KeyHeader = "Idempotency-Key"

// New returns the app over book.
func New(book *ledger.Book) *fiber.App {
	app := fiber.New(fiber.Config{
		DisableStartupMessage: true,
		// Fiber's own error handler answers every returned error; the
		// book only records how (router.go:170-173 calls it).
		ErrorHandler: func(c *fiber.Ctx, err error) error {
			herr := fiber.DefaultErrorHandler(c, err)
			recordAnswer(c, book)
			return herr
		},
	})
	app.Use(func(c *fiber.Ctx) error {
		err := c.Next()
		if err == nil {
			recordAnswer(c, book)
		}
		return err
	})
	app.Use(principal)
	// Every other setting is the middleware's default: keys of 36
	// characters, in-memory storage and lock, all response headers kept,
	// 30 minutes' lifetime.
	app.Use(idempotency.New(idempotency.Config{KeyHeader: KeyHeader}))
	app.Post("/v1/payments", func(c *fiber.Ctx) error { return create(c, book) })
	app.Get("/v1/payments", func(c *fiber.Ctx) error {
		list := book.List(caller(c))
		return c.JSON(fiber.Map{"data": list, "total": len(list)})
	})
	app.Get("/v1/payments/:id", func(c *fiber.Ctx) error {
		p, ok := book.Get(caller(c), c.Params("id"))
		if !ok {
			return problem(c, fiber.StatusNotFound, "no such payment")
		}
		return c.JSON(p)
	})
	return app
}

// recordAnswer records in the book how an answer of the guarded
// operation is sent, replays included.
func recordAnswer(c *fiber.Ctx, book *ledger.Book) {
	if c.Method() == fiber.MethodPost && c.Path() == "/v1/payments" {
		book.Answered(c.Response().StatusCode(), string(c.Response().Header.ContentType()))
	}
}

// principal refuses a request without a bearer token.
func principal(c *fiber.Ctx) error {
	if caller(c) == "" {
		return problem(c, fiber.StatusUnauthorized, "send Authorization: Bearer <token>")
	}
	return c.Next()
}

// caller is the bearer token, copied: Fiber's strings point into a
// buffer it reuses once the request is done.
func caller(c *fiber.Ctx) string {
	token, ok := strings.CutPrefix(utils.CopyString(c.Get(fiber.HeaderAuthorization)), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(token)
}

// create executes the payment. Its answers, errors included, are written
// here and returned as nil, as Fiber's handlers commonly do; the
// middleware then stores them all (an error returned instead would skip
// storing, middleware/idempotency/idempotency.go:111-114).
func create(c *fiber.Ctx, book *ledger.Book) error {
	if d := ledger.Delay(c.Get(ledger.DelayHeader)); d > 0 {
		time.Sleep(d)
	}
	p, err := book.Create(caller(c), utils.CopyString(c.Get(KeyHeader)), append([]byte(nil), c.Body()...))
	if errors.Is(err, ledger.ErrInvalidPayment) {
		return problem(c, fiber.StatusBadRequest, err.Error())
	}
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(p)
}

// problem writes an RFC 9457 document.
func problem(c *fiber.Ctx, status int, detail string) error {
	c.Set(fiber.HeaderContentType, "application/problem+json")
	body, _ := c.App().Config().JSONEncoder(fiber.Map{ // a map of strings and an int always encodes
		"type": "about:blank", "title": utils.StatusMessage(status), "status": status, "detail": detail,
	})
	return c.Status(status).Send(body)
}
