package testserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/idemkit/idem/server"
)

// Payment statuses. Payments settle synchronously in the reference server.
const paymentSucceeded = "succeeded"

// maxReferenceLength is the longest reference a payment may carry, in
// characters.
const maxReferenceLength = 128

// storeRetryAfter is the Retry-After hint sent when the store fails or a
// newer owner holds the key.
const storeRetryAfter = time.Second

var currencyPattern = regexp.MustCompile(`^[A-Z]{3}$`)

// paymentsAPI serves /v1/payments, /v1/payouts and /v1/operations. Handlers
// that make an effect commit it in one atomic step with the idempotency key
// held for the request, so an effect never exists without its stored
// answer, nor the other way round.
type paymentsAPI struct {
	store       Store
	now         func() time.Time
	maxBody     int64
	payoutDelay time.Duration
	logger      *slog.Logger
	principal   server.PrincipalFunc
	// heldPrincipal: the idempotency layer in front finds principals with
	// principal too, so a request it holds a key for takes the principal
	// from the key's scope instead of hashing the token again.
	heldPrincipal bool
	// formBodies takes form-encoded bodies too (formFields), for a
	// dialect whose provider's API is form-encoded.
	formBodies bool
	// paymentDoc and objectFields are the dialect's (see Dialect).
	paymentDoc   func(Payment) any
	objectFields []string
}

// doc is p as the dialect's provider shows it.
func (a *paymentsAPI) doc(p Payment) any {
	if a.paymentDoc == nil {
		return p
	}
	return a.paymentDoc(p)
}

// moneyRequest is the body of POST /v1/payments and POST /v1/payouts.
type moneyRequest struct {
	Amount    int64
	Currency  string
	Reference string
}

func (a *paymentsAPI) createPayment(w http.ResponseWriter, r *http.Request) {
	principal, req, ok := a.readMoneyRequest(w, r)
	if !ok {
		return
	}
	p := Payment{
		ID:        newID(paymentIDPrefix),
		Principal: principal,
		Amount:    req.Amount,
		Currency:  req.Currency,
		Reference: req.Reference,
		Status:    paymentSucceeded,
		Created:   a.now().UTC(),
	}
	resp, err := jsonResponse(http.StatusCreated, a.doc(p))
	if err != nil {
		a.writeInternalError(w, err)
		return
	}
	resp.Header.Set("Location", "/v1/payments/"+p.ID)
	resp.ResourceID = p.ID
	a.commit(w, r, resp, func(ctx context.Context, c *Completion) error {
		return a.store.CreatePayment(ctx, p, c)
	})
}

func (a *paymentsAPI) getPayment(w http.ResponseWriter, r *http.Request) {
	principal, ok := a.requirePrincipal(w, r)
	if !ok {
		return
	}
	p, err := a.store.GetPayment(r.Context(), principal, r.PathValue("id"))
	if err != nil {
		a.writeStoreError(w, err, "payment")
		return
	}
	a.writeJSON(w, http.StatusOK, a.doc(p))
}

func (a *paymentsAPI) listPayments(w http.ResponseWriter, r *http.Request) {
	principal, ok := a.requirePrincipal(w, r)
	if !ok {
		return
	}
	payments, err := a.store.ListPayments(r.Context(), principal)
	if err != nil {
		a.writeStoreError(w, err, "payment")
		return
	}
	page, hasMore, rerr := listPage(r, payments)
	if rerr != nil {
		writeRequestError(w, rerr)
		return
	}
	if page == nil {
		page = []Payment{} // "data": [] rather than null
	}
	a.writeJSON(w, http.StatusOK, paymentList{Object: "list", URL: routePayments, HasMore: hasMore, Data: page, Total: len(payments)})
}

// readMoneyRequest authenticates the caller and parses a strict
// {"amount","currency","reference"} body. On failure it has answered.
func (a *paymentsAPI) readMoneyRequest(w http.ResponseWriter, r *http.Request) (string, moneyRequest, bool) {
	principal, ok := a.requirePrincipal(w, r)
	if !ok {
		return "", moneyRequest{}, false
	}
	req, rerr := a.parseMoneyRequest(w, r)
	if rerr != nil {
		writeRequestError(w, rerr)
		return "", moneyRequest{}, false
	}
	return principal, req, true
}

func (a *paymentsAPI) parseMoneyRequest(w http.ResponseWriter, r *http.Request) (moneyRequest, *requestError) {
	if a.formBodies && isFormContentType(r) {
		body, rerr := readBody(w, r, a.maxBody)
		if rerr != nil {
			return moneyRequest{}, rerr
		}
		fields, rerr := formFields(body, []string{"amount"}, "amount", "currency", "reference")
		if rerr != nil {
			return moneyRequest{}, rerr
		}
		return validateMoneyRequest(fields)
	}
	if rerr := requireJSONContentType(r); rerr != nil {
		return moneyRequest{}, rerr
	}
	body, rerr := readBody(w, r, a.maxBody)
	if rerr != nil {
		return moneyRequest{}, rerr
	}
	fields, rerr := decodeObject(body, append([]string{"amount", "currency", "reference"}, a.objectFields...)...)
	if rerr != nil {
		return moneyRequest{}, rerr
	}
	for _, name := range a.objectFields {
		if raw, ok := fields[name]; ok && !isJSONObject(raw) {
			return moneyRequest{}, invalidRequest("%s must be a JSON object", name)
		}
	}
	return validateMoneyRequest(fields)
}

// validateMoneyRequest checks each member and names the first bad one.
func validateMoneyRequest(fields map[string]json.RawMessage) (moneyRequest, *requestError) {
	var req moneyRequest
	var rerr *requestError
	rawAmount, ok := fields["amount"]
	if !ok {
		return req, invalidRequest("amount is required")
	}
	if req.Amount, rerr = decodeInt("amount", rawAmount, 1, 1<<63-1); rerr != nil {
		return req, rerr
	}
	rawCurrency, ok := fields["currency"]
	if !ok {
		return req, invalidRequest("currency is required")
	}
	if req.Currency, rerr = decodeString("currency", rawCurrency); rerr != nil {
		return req, rerr
	}
	if !currencyPattern.MatchString(req.Currency) {
		return req, invalidRequest("currency must be three upper-case letters (ISO 4217), got %q", truncate(req.Currency, 16))
	}
	if rawReference, ok := fields["reference"]; ok {
		if req.Reference, rerr = decodeString("reference", rawReference); rerr != nil {
			return req, rerr
		}
		if n := utf8.RuneCountInString(req.Reference); n > maxReferenceLength {
			return req, invalidRequest("reference must be at most %d characters, got %d", maxReferenceLength, n)
		}
		// Control characters have no place in a reference, and a NUL is
		// more than some stores (PostgreSQL text) can hold.
		if strings.ContainsFunc(req.Reference, unicode.IsControl) {
			return req, invalidRequest("reference must not contain control characters")
		}
	}
	return req, nil
}

// truncate shortens s for an error detail.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// requirePrincipal answers 401 for a malformed Authorization header.
func (a *paymentsAPI) requirePrincipal(w http.ResponseWriter, r *http.Request) (string, bool) {
	if a.heldPrincipal {
		if held, ok := HeldFrom(r.Context()); ok {
			return held.Reservation.Scope.Principal, true
		}
	}
	principal, err := a.principal(r)
	if err != nil {
		WriteProblem(w, http.StatusUnauthorized, ProblemUnauthorized, "Unauthorized", err.Error(), 0)
		return "", false
	}
	return principal, true
}

// commit runs create with the completion of the key held for this request
// (nil when the route is not guarded), then answers resp. The response is
// fully built before the effect so that what is stored and what is sent
// are the same bytes.
func (a *paymentsAPI) commit(w http.ResponseWriter, r *http.Request, resp Response, create func(context.Context, *Completion) error) {
	held, guarded := HeldFrom(r.Context())
	var completion *Completion
	if guarded {
		completion = held.Completion(resp)
	}
	if err := create(r.Context(), completion); err != nil {
		if guarded {
			// The effect commits with the key's completion or not at all:
			// nothing ran, so the layer frees the key of this 503. Had the
			// commit landed after all, the key is completed and the
			// release is refused.
			held.MarkNotExecuted()
		}
		a.writeStoreError(w, err, "")
		return
	}
	if guarded {
		held.MarkCompleted()
	}
	writeResponse(w, resp)
}

// writeStoreError maps a store error to its problem: ErrNotFound → 404;
// ErrFenced → 409 (this request's hold on its key ended before the effect
// committed, so nothing was written; a retry replays the key's answer or
// runs); a transaction past the store timeout, a full store, anything
// else → 503 with Retry-After.
func (a *paymentsAPI) writeStoreError(w http.ResponseWriter, err error, resource string) {
	switch {
	case errors.Is(err, ErrNotFound):
		WriteProblem(w, http.StatusNotFound, ProblemNotFound, "Not found", "no such "+resource, 0)
	case errors.Is(err, ErrFenced):
		WriteProblem(w, http.StatusConflict, ProblemInProgress, "Request in progress",
			"this request's lease on the idempotency key ended before its effect was committed, and the key was taken over "+
				"or removed; nothing was written; retry with the same key to get the key's answer", storeRetryAfter)
	case errors.Is(err, server.ErrStoreTimeout):
		a.logger.Warn("the effect's transaction ran past the store timeout; rolled back", "err", err)
		WriteProblem(w, http.StatusServiceUnavailable, ProblemStoreUnavailable, "Store timeout",
			"the server's store did not commit the request within its timeout and gave it up; retry with the same key", storeRetryAfter)
	case errors.Is(err, ErrStoreFull):
		a.logger.Warn("store full; new payment refused", "err", err)
		WriteProblem(w, http.StatusServiceUnavailable, ProblemStoreUnavailable, "Store full",
			"the server's store is full; nothing was written; retry later", storeRetryAfter)
	default:
		a.logger.Error("store failed", "err", err)
		WriteProblem(w, http.StatusServiceUnavailable, ProblemStoreUnavailable, "Store unavailable",
			"the server's store is unavailable; retry later", storeRetryAfter)
	}
}

// jsonResponse builds a JSON response for v. Marshalling fails only for
// times outside years 0-9999, which a fake clock could produce.
func jsonResponse(status int, v any) (Response, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return Response{}, err
	}
	header := make(http.Header)
	header.Set("Content-Type", "application/json")
	return Response{Status: status, Header: header, Body: body}, nil
}

// writeJSON answers v with status, or 500 if v cannot be encoded.
func (a *paymentsAPI) writeJSON(w http.ResponseWriter, status int, v any) {
	resp, err := jsonResponse(status, v)
	if err != nil {
		a.writeInternalError(w, err)
		return
	}
	writeResponse(w, resp)
}

// writeInternalError answers 500; the idempotency layer then releases the
// key, so a retry runs again.
func (a *paymentsAPI) writeInternalError(w http.ResponseWriter, err error) {
	a.logger.Error("cannot build response", "err", err)
	WriteProblem(w, http.StatusInternalServerError, ProblemInternal, "Internal error", "the response could not be built", 0)
}

// writeResponse sends resp as is.
func writeResponse(w http.ResponseWriter, resp Response) {
	h := w.Header()
	for name, values := range resp.Header {
		h[name] = append([]string(nil), values...)
	}
	h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
	w.WriteHeader(resp.Status)
	_, _ = w.Write(resp.Body)
}
