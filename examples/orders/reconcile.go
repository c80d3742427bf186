package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/idemkit/idem"
)

// reconcileTimeout bounds one look at a provider's ledger.
const reconcileTimeout = 10 * time.Second

// reconcilePages bounds the pages of the provider's list one look reads.
const reconcilePages = 50

// reconciler settles a provider call whose outcome a resend cannot prove,
// from the provider's own ledger. The common case: a process dies after
// sending a booking the carrier refuses (a 400, which Stripe does not
// store: "If incoming parameters failed validation ... no idempotent
// result is saved", https://docs.stripe.com/api/idempotent_requests); the
// next process resends under the same key and gets a fresh 400, which
// says nothing of the attempt that died. The ledger does: the payment the
// call makes carries the call's reference (providers.go), and the
// provider lists them (GET /v1/payments).
//
// Found: the call took effect, and the payment is its answer. Not found,
// after the provider refused the last attempt (a 4xx other than 408, 409,
// 425, 429): it did not, and cannot any more. Every attempt carries the
// same key and bytes; one the provider executed would have been stored
// and replayed to the last attempt, one still executing would have made
// that answer a 409, and one the provider refused before executing
// (validation) is refused again the same way whenever it arrives. Not
// found after a last attempt that got no such answer (a timeout, a 5xx)
// proves nothing: the request may still be running, and the call stays
// unknown. The status is read from the intent's LastError, which is all
// an Intent says of its last answer; a message that does not name one
// leaves the call unknown.
func (s *service) reconciler() idem.Reconciler {
	return func(ctx context.Context, in *idem.Intent) (idem.Reconciliation, error) {
		ref, ok := callReference(in.Name)
		if !ok {
			return idem.Reconciliation{}, fmt.Errorf("intent %q is not a call of an order's saga", in.Name)
		}
		ctx, cancel := context.WithTimeout(ctx, reconcileTimeout)
		defer cancel()
		doc, found, err := s.findPayment(ctx, in.URL, ref)
		switch {
		case err != nil:
			return idem.Reconciliation{}, err
		case !found && !refusedLast(in.LastError):
			return idem.Reconciliation{}, fmt.Errorf("no payment referenced %s yet, and the last attempt was not refused: it may still be running", ref)
		case !found:
			return idem.Reconciliation{Outcome: idem.OutcomeFailed,
				Evidence: "the provider's ledger (" + in.URL + ") has no payment referenced " + ref}, nil
		}
		resp := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(string(doc)))}
		return idem.Reconciliation{Outcome: idem.OutcomeSucceeded,
			Evidence: "the provider's ledger (" + in.URL + ") holds the payment referenced " + ref, Response: resp}, nil
	}
}

// answered finds the status of the provider's last answer in an
// intent's LastError ("... server answered 400 (refused) ...").
var answered = regexp.MustCompile(`server answered (\d{3})`)

// refusedLast says whether the provider's last answer to the intent was a
// refusal that ends a request: a 4xx other than 408, 409, 425 and 429.
func refusedLast(lastError string) bool {
	m := answered.FindStringSubmatch(lastError)
	if m == nil {
		return false
	}
	status, _ := strconv.Atoi(m[1])
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooEarly, http.StatusTooManyRequests:
		return false
	}
	return status >= 400 && status < 500
}

// callReference is the reference the payment of the saga call named
// saga/<order>/<step>[/compensation] carries (providers.go): the order id
// for the charge, "ship-" and it for the booking, "refund-" and it for
// the charge's compensation.
func callReference(name string) (string, bool) {
	parts := strings.Split(name, "/")
	if len(parts) < 3 || len(parts) > 4 || parts[0] != "saga" || parts[1] == "" {
		return "", false
	}
	order := parts[1]
	switch {
	case len(parts) == 4 && parts[2] == chargeStep && parts[3] == "compensation":
		return "refund-" + order, true
	case len(parts) == 3 && parts[2] == chargeStep:
		return order, true
	case len(parts) == 3 && parts[2] == shipStep:
		return "ship-" + order, true
	}
	return "", false
}

// findPayment pages through the payments listed at collection (the URL
// the call was sent to) for the one carrying ref, and returns it as the
// provider serves it.
func (s *service) findPayment(ctx context.Context, collection, ref string) (json.RawMessage, bool, error) {
	after := ""
	for range reconcilePages {
		q := url.Values{"limit": {"100"}}
		if after != "" {
			q.Set("starting_after", after)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, collection+"?"+q.Encode(), nil)
		if err != nil {
			return nil, false, err
		}
		req.Header.Set("Authorization", "Bearer "+s.p.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, false, fmt.Errorf("list payments at %s: %w", collection, err)
		}
		var page struct {
			Data    []json.RawMessage `json:"data"`
			HasMore bool              `json:"has_more"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&page)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, false, fmt.Errorf("list payments at %s: status %d", collection, resp.StatusCode)
		}
		if err != nil {
			return nil, false, fmt.Errorf("list payments at %s: %w", collection, err)
		}
		for _, raw := range page.Data {
			var p struct {
				ID        string `json:"id"`
				Reference string `json:"reference"`
			}
			if err := json.Unmarshal(raw, &p); err != nil {
				return nil, false, fmt.Errorf("list payments at %s: %w", collection, err)
			}
			if p.Reference == ref {
				return raw, true, nil
			}
			after = p.ID
		}
		if !page.HasMore || len(page.Data) == 0 {
			return nil, false, nil
		}
	}
	return nil, false, fmt.Errorf("list payments at %s: more than %d pages; look it up by hand", collection, reconcilePages)
}
