// Package ledger is the book of payments the graded servers share: what
// each execution of a payment request did (its effect, with the principal
// and the key it ran under) and how each answer was sent, so that a test
// can prove a verdict of `idem check` from the server's side.
package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// Payment is one payment as the APIs show it.
type Payment struct {
	ID        string `json:"id"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	Reference string `json:"reference"`
}

// Effect is one execution of the payment operation: the payment it made
// and what it ran under.
type Effect struct {
	// Principal is the bearer token of the request.
	Principal string
	// Key is the Idempotency-Key as the server took it ("" for none).
	Key string
	// Body is a SHA-256 of the request body.
	Body string
	// PaymentID is the payment the execution created.
	PaymentID string
}

// Answer is how one answer of the guarded operation was sent.
type Answer struct {
	Status      int
	ContentType string
}

// ErrInvalidPayment is wrapped by Book.Create for a body that is not a
// valid payment.
var ErrInvalidPayment = errors.New("invalid payment")

// Book keeps the payments, the effects that made them and the answers
// sent. Its zero value is ready; it is safe for concurrent use.
type Book struct {
	mu       sync.Mutex
	payments map[string][]Payment // by principal, in creation order
	effects  []Effect
	answers  []Answer
}

// Create executes the payment operation: it validates body (amount a
// positive integer, currency three letters, reference a string), creates
// the payment and records the effect under principal and key.
func (b *Book) Create(principal, key string, body []byte) (Payment, error) {
	var p Payment
	if err := json.Unmarshal(body, &p); err != nil {
		return Payment{}, fmt.Errorf("%w: %v", ErrInvalidPayment, err)
	}
	if p.Amount <= 0 || len(p.Currency) != 3 {
		return Payment{}, fmt.Errorf("%w: amount must be positive and currency three letters", ErrInvalidPayment)
	}
	sum := sha256.Sum256(body)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.payments == nil {
		b.payments = map[string][]Payment{}
	}
	p.ID = fmt.Sprintf("pay_%d", len(b.effects)+1)
	b.payments[principal] = append(b.payments[principal], p)
	b.effects = append(b.effects, Effect{Principal: principal, Key: key, Body: hex.EncodeToString(sum[:]), PaymentID: p.ID})
	return p, nil
}

// List returns the principal's payments in creation order.
func (b *Book) List(principal string) []Payment {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Payment{}, b.payments[principal]...)
}

// Get returns the principal's payment id.
func (b *Book) Get(principal, id string) (Payment, bool) {
	for _, p := range b.List(principal) {
		if p.ID == id {
			return p, true
		}
	}
	return Payment{}, false
}

// Answered records how an answer was sent.
func (b *Book) Answered(status int, contentType string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.answers = append(b.answers, Answer{Status: status, ContentType: contentType})
}

// Effects returns every effect so far.
func (b *Book) Effects() []Effect {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Effect(nil), b.effects...)
}

// Answers returns every recorded answer so far.
func (b *Book) Answers() []Answer {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Answer(nil), b.answers...)
}
