package idemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// NoListEndpoint, as ConformanceOptions.ListEndpoint, tells the checker the
// server has no list of the guarded resources; effects are then counted
// by the resource ids of the answers alone.
const NoListEndpoint = "-"

// DefaultConformanceListEndpoint is where the reference API lists the
// principal's payments.
const DefaultConformanceListEndpoint = "/v1/payments"

// defaultListCount reads how many resources a list answer holds: a
// top-level "total" number, else the length of a top-level "data" (or
// "items", "results") array, else the length of a top-level array. A page
// without "total" that says "has_more" is followed by the next
// (starting_after its last id), and the counts added up.
func defaultListCount(body []byte) (int, bool) {
	var arr []json.RawMessage
	if json.Unmarshal(body, &arr) == nil {
		return len(arr), true
	}
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return 0, false
	}
	var total int
	if raw, ok := doc["total"]; ok && json.Unmarshal(raw, &total) == nil {
		return total, true
	}
	for _, name := range []string{"data", "items", "results"} {
		if raw, ok := doc[name]; ok && json.Unmarshal(raw, &arr) == nil {
			return len(arr), true
		}
	}
	return 0, false
}

// count returns how many resources the list endpoint shows to the
// principal of override (nil: the first principal). ok is false when the
// run has no usable list; the first failure turns the list off for the
// run, so every check judges by the same means.
func (r *conformanceRun) count(ctx context.Context, override http.Header) (n int, ok bool) {
	if r.cfg.listURL == "" || r.listErr != nil {
		return 0, false
	}
	n, err := r.fetchCount(ctx, override)
	if err != nil {
		r.listErr = err
		return 0, false
	}
	return n, true
}

func (r *conformanceRun) fetchCount(ctx context.Context, override http.Header) (int, error) {
	total, after := 0, ""
	for range maxListPages {
		body, err := r.fetchList(ctx, override, after)
		if err != nil {
			return 0, err
		}
		n, ok := r.cfg.listCount(body)
		if !ok {
			return 0, fmt.Errorf("GET %s: no count in the answer", r.cfg.listURL)
		}
		total += n
		next, more := nextPageCursor(body)
		if !more || r.cfg.customCount {
			return total, nil
		}
		after = next
	}
	return 0, fmt.Errorf("GET %s: more than %d pages", r.cfg.listURL, maxListPages)
}

// maxListPages bounds how many pages of a list are read for one count.
const maxListPages = 1000

// fetchList reads one page of the list, the one after the resource id
// after ("" for the first).
func (r *conformanceRun) fetchList(ctx context.Context, override http.Header, after string) ([]byte, error) {
	target := r.cfg.listURL
	if after != "" {
		u, err := url.Parse(target)
		if err != nil {
			return nil, err
		}
		q := u.Query()
		q.Set("starting_after", after)
		q.Set("limit", "100")
		u.RawQuery = q.Encode()
		target = u.String()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, err
	}
	for name, values := range r.cfg.header {
		req.Header[name] = append([]string(nil), values...)
	}
	for name, values := range override {
		req.Header[name] = append([]string(nil), values...)
	}
	resp, err := r.cfg.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxConformanceBody))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s answered %d", r.cfg.listURL, resp.StatusCode)
	}
	return body, nil
}

// nextPageCursor reads a Stripe-style page (https://docs.stripe.com/api/pagination):
// when it has no "total", says "has_more": true and its "data" ends with
// an object with a string "id", more is true and after is that id, the
// starting_after of the next page.
func nextPageCursor(body []byte) (after string, more bool) {
	var page struct {
		Total   *json.RawMessage `json:"total"`
		HasMore bool             `json:"has_more"`
		Data    []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &page) != nil || page.Total != nil || !page.HasMore || len(page.Data) == 0 {
		return "", false
	}
	last := page.Data[len(page.Data)-1].ID
	return last, last != ""
}

// effects is a count of resources before a step, to learn how many the
// step created.
type effects struct {
	before int
	ok     bool
}

func (r *conformanceRun) countBefore(ctx context.Context, override http.Header) effects {
	n, ok := r.count(ctx, override)
	return effects{before: n, ok: ok}
}

// created returns how many resources appeared since countBefore, and
// whether that is known.
func (r *conformanceRun) created(ctx context.Context, e effects, override http.Header) (int, bool) {
	if !e.ok {
		return 0, false
	}
	n, ok := r.count(ctx, override)
	return n - e.before, ok
}
