package testserver

import (
	"log/slog"
	"net/http"
	"time"
)

// UnguardedPaymentsHandler serves POST /v1/payments with the reference
// server's own payment handler over store, but without the idempotency
// layer: no key is required, reserved or replayed. It exists to measure
// what the layer costs, as the baseline of the protected server; never
// expose it where retries can happen.
func UnguardedPaymentsHandler(store Store) http.Handler {
	api := &paymentsAPI{
		store:       store,
		now:         time.Now,
		maxBody:     DefaultMaxBody,
		payoutDelay: DefaultPayoutDelay,
		logger:      slog.New(slog.DiscardHandler),
		principal:   principalFunc(processPrincipalKey()),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+routePayments, api.createPayment)
	return mux
}
