package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// adminFaultsPath is the reference server's fault-injection endpoint
// (`idem serve --admin-addr public --admin-token T`).
const adminFaultsPath = "/admin/faults"

// adminHoldDelay is how long each guarded request is held while the
// in-progress checks run: long enough for duplicates to overlap.
const adminHoldDelay = 150 * time.Millisecond

// adminReleaseTimeout bounds the request that lifts the hold; it runs
// even when the run's context has ended, so the server is not left slow.
const adminReleaseTimeout = 5 * time.Second

// adminHold slows a reference server through /admin/faults so that the
// in-progress check always sees a request still executing.
type adminHold struct {
	client *http.Client
	url    string
	token  string
}

// newAdminHold proves the token works (GET /admin/faults) before the run,
// so that a wrong token is a clear error rather than a failed check.
func newAdminHold(ctx context.Context, baseURL, token string) (*adminHold, error) {
	h := &adminHold{
		client: &http.Client{Timeout: 10 * time.Second},
		url:    strings.TrimSuffix(baseURL, "/") + adminFaultsPath,
		token:  token,
	}
	if err := h.send(ctx, http.MethodGet, nil); err != nil {
		return nil, fmt.Errorf("check: --admin-token: %w", err)
	}
	return h, nil
}

// hold sets the handler delay; the returned function clears it.
func (h *adminHold) hold(ctx context.Context) (func(), error) {
	if err := h.send(ctx, http.MethodPost, fmt.Appendf(nil, `{"handler_delay":%q}`, adminHoldDelay)); err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), adminReleaseTimeout)
		defer cancel()
		_ = h.send(ctx, http.MethodPost, []byte(`{"handler_delay":"0s"}`))
	}, nil
}

func (h *adminHold) send(ctx context.Context, method string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, method, h.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s answered %d; is the server `idem serve --admin-addr public --admin-token` with this token?", method, h.url, resp.StatusCode)
	}
	return nil
}
