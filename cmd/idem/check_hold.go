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
// (`idem serve --admin-token`).
const adminFaultsPath = "/admin/faults"

// adminHoldDelay is how long each guarded request is held while the
// in-progress checks run: long enough for duplicates to overlap.
const adminHoldDelay = 150 * time.Millisecond

// adminHold slows a reference server through /admin/faults so that the
// in-progress check always sees a request still executing.
type adminHold struct {
	ctx    context.Context
	client *http.Client
	url    string
	token  string
}

// newAdminHold proves the token works (GET /admin/faults) before the run,
// so that a wrong token is a clear error rather than a failed check.
func newAdminHold(ctx context.Context, baseURL, token string) (*adminHold, error) {
	h := &adminHold{
		ctx:    ctx,
		client: &http.Client{Timeout: 10 * time.Second},
		url:    strings.TrimSuffix(baseURL, "/") + adminFaultsPath,
		token:  token,
	}
	if err := h.send(http.MethodGet, nil); err != nil {
		return nil, fmt.Errorf("check: --admin-token: %w", err)
	}
	return h, nil
}

// hold sets the handler delay; the returned function clears it. Errors
// surface as the in-progress check's verdict: the token was proven above.
func (h *adminHold) hold() func() {
	_ = h.send(http.MethodPost, fmt.Appendf(nil, `{"handler_delay":%q}`, adminHoldDelay))
	return func() { _ = h.send(http.MethodPost, []byte(`{"handler_delay":"0s"}`)) }
}

func (h *adminHold) send(method string, body []byte) error {
	req, err := http.NewRequestWithContext(h.ctx, method, h.url, bytes.NewReader(body))
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
		return fmt.Errorf("%s %s answered %d; is the server `idem serve --admin-token` with this token?", method, h.url, resp.StatusCode)
	}
	return nil
}
