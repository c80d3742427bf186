package testserver

import (
	"net/http"
	"strconv"
)

// Pagination of GET /v1/payments, as Stripe's list endpoints page
// (https://docs.stripe.com/api/pagination): "limit, optional, default is
// 10. This specifies a limit on the number of objects to return, ranging
// between 1 and 100."; "starting_after is an object ID that defines your
// place in the list".
const (
	defaultListLimit = 10
	maxListLimit     = 100
)

// paymentList is the body of GET /v1/payments: Stripe's list object, one
// page newest first, and (beyond Stripe) the principal's total.
type paymentList struct {
	Object  string    `json:"object"`
	URL     string    `json:"url"`
	HasMore bool      `json:"has_more"`
	Data    []Payment `json:"data"`
	Total   int       `json:"total"`
}

// listPage reads ?limit= and ?starting_after= and returns the page of
// payments (newest first) they name.
func listPage(r *http.Request, payments []Payment) (page []Payment, hasMore bool, rerr *requestError) {
	q := r.URL.Query()
	limit := defaultListLimit
	if raw := q.Get("limit"); q.Has("limit") {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxListLimit {
			return nil, false, invalidRequest("limit must be an integer from 1 to %d, got %q", maxListLimit, truncate(raw, 16))
		}
		limit = n
	}
	if q.Has("ending_before") {
		return nil, false, invalidRequest("ending_before is not supported; page forward with starting_after")
	}
	start := 0
	if q.Has("starting_after") {
		after := q.Get("starting_after")
		start = -1
		for i, p := range payments {
			if p.ID == after {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return nil, false, invalidRequest("starting_after %q is none of your payments", truncate(after, 64))
		}
	}
	end := min(start+limit, len(payments))
	return payments[start:end], end < len(payments), nil
}
