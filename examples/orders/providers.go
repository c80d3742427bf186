package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The payment provider and the carrier both speak Stripe's dialect of
// idempotency keys (the reference server, `idem serve --dialect stripe`):
// a charge and a refund are payments at the provider, a shipment is a
// booking (a payment of the shipping fee) at the carrier. Every request
// is built from the order row alone, so the completer, which never saw
// the inbound request, builds the same bytes the handler did.

// rates is the carrier's fee by destination. A destination without a
// rate is booked at 0, which the carrier refuses: the refusal a real
// carrier gives for an address it does not serve, here on demand.
var rates = map[string]int64{"FR": 900, "DE": 1100, "NL": 1000, "BE": 950}

// order is an order as its row keeps it.
type order struct {
	ID       string `json:"id"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	ShipTo   string `json:"ship_to"`
}

// providers are the base URLs and the credential of the two services.
type providers struct {
	provider, carrier string
	token             string
}

// money is a POST /v1/payments at base: amount under reference.
func (p providers) money(ctx context.Context, base string, amount int64, currency, reference string) (*http.Request, error) {
	body, err := json.Marshal(map[string]any{"amount": amount, "currency": currency, "reference": reference})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(base, "/")+"/v1/payments", strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+p.token)
	return req, nil
}

// charge is the order's charge at the provider, referenced by the order.
func (p providers) charge(ctx context.Context, o order) (*http.Request, error) {
	return p.money(ctx, p.provider, o.Amount, o.Currency, o.ID)
}

// ship is the order's booking at the carrier, at the destination's fee.
func (p providers) ship(ctx context.Context, o order) (*http.Request, error) {
	return p.money(ctx, p.carrier, rates[o.ShipTo], o.Currency, "ship-"+o.ID)
}

// refund builds, from the charge's answer, the request that undoes it: a
// payment back of the amount the provider charged, referenced
// "refund-" and the charge's reference.
func (p providers) refund(ctx context.Context) func(resp *http.Response) (*http.Request, error) {
	return func(resp *http.Response) (*http.Request, error) {
		var charged struct {
			Amount    int64  `json:"amount"`
			Currency  string `json:"currency"`
			Reference string `json:"reference"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&charged); err != nil {
			return nil, fmt.Errorf("read the charge's answer: %w", err)
		}
		if charged.Reference == "" || charged.Amount <= 0 {
			return nil, fmt.Errorf("the charge's answer names no amount and reference to refund")
		}
		crashPoint("refund-before-call")
		return p.money(ctx, p.provider, charged.Amount, charged.Currency, "refund-"+charged.Reference)
	}
}
