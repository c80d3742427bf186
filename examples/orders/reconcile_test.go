package main

import (
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem"
)

func TestCallReference(t *testing.T) {
	for name, want := range map[string]string{
		"saga/ord-1/charge":              "ord-1",
		"saga/ord-1/ship":                "ship-ord-1",
		"saga/ord-1/charge/compensation": "refund-ord-1",
		"saga/ord-1/ship/compensation":   "",
		"saga//charge":                   "",
		"orders/ord-1/charge":            "",
		"saga/ord-1/receipt":             "",
	} {
		ref, ok := callReference(name)
		assert.Equal(t, want != "", ok, name)
		assert.Equal(t, want, ref, name)
	}
}

func TestRefusedLast(t *testing.T) {
	for text, want := range map[string]bool{
		"idem: gave up: outcome unknown (attempts=2, last status=400): server answered 400 (refused), which does not prove": true,
		"server answered 422 (refused)":                true,
		"server answered 409 (conflict)":               false,
		"server answered 429":                          false,
		"server answered 503":                          false,
		"Post \"http://x\": context deadline exceeded": false,
		"": false,
	} {
		assert.Equal(t, want, refusedLast(text), text)
	}
}

// The reconciler finds a payment the provider made under the call's
// reference, and says Failed only when it is absent after a refusal.
func TestReconcilerReadsTheLedger(t *testing.T) {
	p := newProviders(t)
	s := &service{p: providers{provider: p.provider.URL, carrier: p.carrier.URL, token: testToken}}
	ctx := context.Background()
	req, err := s.p.charge(ctx, order{ID: "ord-rec", Amount: 700, Currency: "EUR"})
	require.NoError(t, err)
	resp, err := p.provider.Client().Do(req)
	require.NoError(t, err)
	require.Equal(t, 201, resp.StatusCode)
	_ = resp.Body.Close()

	rec := s.reconciler()
	v, err := rec(ctx, &idem.Intent{Name: "saga/ord-rec/charge", URL: p.provider.URL + "/v1/payments"})
	require.NoError(t, err)
	assert.Equal(t, idem.OutcomeSucceeded, v.Outcome)
	body, err := io.ReadAll(v.Response.Body)
	require.NoError(t, err)
	assert.Contains(t, string(body), `"reference":"ord-rec"`)

	missing := &idem.Intent{Name: "saga/ord-rec/ship", URL: p.carrier.URL + "/v1/payments"}
	_, err = rec(ctx, missing)
	require.Error(t, err, "absent, but the last attempt was not refused: unknown")
	missing.LastError = "server answered 400 (refused), which does not prove whether an earlier attempt took effect"
	v, err = rec(ctx, missing)
	require.NoError(t, err)
	assert.Equal(t, idem.OutcomeFailed, v.Outcome)
}
