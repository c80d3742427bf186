package fleettest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// maxWait caps how long the load loop honours a Retry-After, so a test
// does not sleep a whole second per 409.
const maxWait = 100 * time.Millisecond

// answer is the final answer one request got for a key.
type answer struct {
	key       string
	paymentID string
	replayed  bool
}

// newLoadClient opens a new connection per request, so the proxy spreads
// every request over the replicas.
func newLoadClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{DisableKeepAlives: true},
		Timeout:   10 * time.Second,
	}
}

// payUntilAnswered posts one payment under key until it gets a 201,
// retrying what the protocol says to retry: 409 in progress, 503, and
// connections that broke (a replica died). Anything else fails the test.
func payUntilAnswered(ctx context.Context, t *testing.T, client *http.Client, baseURL, token, key string) answer {
	body := fmt.Sprintf(`{"amount":1000,"currency":"EUR","reference":%q}`, key)
	for {
		if ctx.Err() != nil {
			t.Errorf("key %s: no answer before the test's deadline", key)
			return answer{key: key}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, baseURL+"/v1/payments", strings.NewReader(body))
		if err != nil {
			t.Errorf("key %s: %v", key, err)
			return answer{key: key}
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", key)
		resp, err := client.Do(req)
		if err != nil {
			sleep(ctx, 20*time.Millisecond)
			continue
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case err != nil:
			sleep(ctx, 20*time.Millisecond)
		case resp.StatusCode == http.StatusCreated:
			var p struct{ ID string }
			if err := json.Unmarshal(raw, &p); err != nil || p.ID == "" {
				t.Errorf("key %s: 201 without a payment id: %s", key, raw)
			}
			return answer{key: key, paymentID: p.ID, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
		case resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusServiceUnavailable:
			sleep(ctx, retryAfter(resp.Header.Get("Retry-After")))
		default:
			t.Errorf("key %s: unexpected %d: %s", key, resp.StatusCode, raw)
			return answer{key: key}
		}
	}
}

// retryAfter reads Retry-After seconds, capped at maxWait.
func retryAfter(v string) time.Duration {
	secs, err := strconv.Atoi(v)
	if err != nil || secs <= 0 {
		return 20 * time.Millisecond
	}
	return min(time.Duration(secs)*time.Second, maxWait)
}

func sleep(ctx context.Context, d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
}

// runDuplicates sends every key dups times, the duplicates of one key
// concurrently, over workers connections at a time. After every finished
// key, progress is called with the number of keys done so far.
func runDuplicates(ctx context.Context, t *testing.T, baseURL, token string, keys []string, dups, workers int, progress func(done int)) []answer {
	jobs := make(chan string)
	results := make(chan answer)
	var wg sync.WaitGroup
	client := newLoadClient()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for key := range jobs {
				results <- payUntilAnswered(ctx, t, client, baseURL, token, key)
			}
		}()
	}
	go func() {
		for _, key := range keys {
			for range dups {
				jobs <- key
			}
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	var all []answer
	perKey := map[string]int{}
	done := 0
	for a := range results {
		all = append(all, a)
		if perKey[a.key]++; perKey[a.key] == dups {
			done++
			if progress != nil {
				progress(done)
			}
		}
	}
	return all
}

// paymentTotal reads the total of GET /v1/payments for token.
func paymentTotal(t *testing.T, baseURL, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, baseURL+"/v1/payments", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := newLoadClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct{ Total int }
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	return list.Total
}
