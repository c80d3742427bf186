package idem

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/dialect"
	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// providerDialects pairs each client dialect with the reference server's
// simulator of the same provider. The simulators were written from the
// providers' pages apart from the dialects, so each side checks the other.
var providerDialects = []struct {
	name string
	d    func() dialect.Dialect
	// reuseDetected says the provider documents an answer for a reused
	// key with a changed body; PayPal and Adyen replay the first answer.
	reuseDetected bool
}{
	{"idem", dialect.Draft, true},
	{"stripe", dialect.Stripe, true},
	{"stripe-v2", dialect.StripeV2, true},
	{"paypal", dialect.PayPal, false},
	{"adyen", dialect.Adyen, false},
	{"square", dialect.Square, true},
}

// A client speaking each provider's dialect survives lost answers, 5xx
// and concurrent duplicates of slow originals against that provider's
// simulator: exactly one payment per intent, and no intent Failed.
func TestDialectsAgainstTheirSimulators(t *testing.T) {
	t.Parallel()
	for _, p := range providerDialects {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			t.Run("lost answers", func(t *testing.T) {
				t.Parallel()
				srv := idemtest.NewServer(t, idemtest.WithDialect(p.name))
				c := newTestClient(t, WithDialect(p.d()))
				for i := range 5 {
					srv.LoseNextResponses(1)
					in := begin(t, c, fmt.Sprintf("lost/%d", i), paymentRequest(t, srv.URL, 100+i, fmt.Sprintf("lost-%d", i)))
					resp, err := c.Do(context.Background(), in)
					require.NoError(t, err, "intent %d", i)
					assert.Less(t, resp.StatusCode, 300)
					assert.Equal(t, Succeeded, in.State)
					assert.Equal(t, 2, in.Attempts)
				}
				assert.Equal(t, 5, srv.PaymentCount())
			})
			t.Run("5xx before execution", func(t *testing.T) {
				t.Parallel()
				srv := idemtest.NewServer(t, idemtest.WithDialect(p.name))
				c := newTestClient(t, WithDialect(p.d()))
				srv.FailNext(2, http.StatusServiceUnavailable, 0)
				in := begin(t, c, "", paymentRequest(t, srv.URL, 100, "5xx"))
				_, err := c.Do(context.Background(), in)
				require.NoError(t, err)
				assert.Equal(t, Succeeded, in.State)
				assert.Equal(t, 3, in.Attempts)
				assert.Equal(t, 1, srv.PaymentCount())
			})
			t.Run("concurrent duplicates of slow originals", func(t *testing.T) {
				t.Parallel()
				// Two processes sharing one keystore send the same intent
				// at once: the second meets the first still executing.
				srv := idemtest.NewServer(t, idemtest.WithDialect(p.name))
				srv.SetHandlerDelay(200 * time.Millisecond)
				store := keystore.NewMemory()
				opts := []Option{WithStore(nopCloseStore{store}), WithDialect(p.d()), WithMaxAttempts(10),
					WithBackoffPolicy(func(int) time.Duration { return 50 * time.Millisecond }),
					WithRetryAfterCeiling(100 * time.Millisecond)}
				// The second process has no secrets of the first: it gives
				// the same credentials through its request editor.
				a, b := newTestClient(t, opts...), newTestClient(t, append(opts, WithRequestEditor(bearer(testToken)))...)
				var wg sync.WaitGroup
				const n = 4
				results := make([][2]*Intent, n)
				errs := make([][2]error, n)
				for i := range n {
					in := begin(t, a, fmt.Sprintf("dup/%d", i), paymentRequest(t, srv.URL, 100+i, fmt.Sprintf("dup-%d", i)))
					twin, err := b.Resume(context.Background(), in.Key)
					require.NoError(t, err)
					results[i] = [2]*Intent{in, twin}
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, errs[i][0] = a.Do(context.Background(), in)
					}()
					wg.Add(1)
					go func() {
						defer wg.Done()
						time.Sleep(20 * time.Millisecond) // let the original start
						_, errs[i][1] = b.Do(context.Background(), twin)
					}()
				}
				wg.Wait()
				for i := range n {
					for j := range 2 {
						require.NoError(t, errs[i][j], "intent %d, process %d", i, j)
						assert.Equal(t, Succeeded, results[i][j].State, "intent %d, process %d", i, j)
					}
				}
				assert.Equal(t, n, srv.PaymentCount())
			})
			t.Run("key reused with another body", func(t *testing.T) {
				t.Parallel()
				if !p.reuseDetected {
					t.Skipf("%s documents no answer for a reused key with another body: its simulator replays the first answer", p.name)
				}
				srv := idemtest.NewServer(t, idemtest.WithDialect(p.name))
				sameKey := func() (string, error) { return "5e1f6c1a-4b5d-4c6e-8f70-81a2b3c4d5e6", nil }
				first := newTestClient(t, WithDialect(p.d()), WithKeyGenerator(sameKey))
				_, err := first.Do(context.Background(), begin(t, first, "", paymentRequest(t, srv.URL, 100, "reuse")))
				require.NoError(t, err)
				second := newTestClient(t, WithDialect(p.d()), WithKeyGenerator(sameKey))
				in := begin(t, second, "", paymentRequest(t, srv.URL, 999, "reuse"))
				_, err = second.Do(context.Background(), in)
				require.ErrorIs(t, err, ErrKeyReused)
				assert.Equal(t, Failed, in.State)
				assert.Equal(t, 1, srv.PaymentCount())
			})
		})
	}
}

// bearer is a request editor that sends token as the bearer credentials.
func bearer(token string) func(context.Context, *http.Request) error {
	return func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}
}
