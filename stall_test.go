package idem

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/idemtest"
	"github.com/idemkit/idem/keystore"
)

// stallingStore is a real memory keystore whose writes stall once armed,
// as a Postgres connection to a partitioned server or a blocked disk
// does: honouring its context, or not at all (held until release).
type stallingStore struct {
	keystore.Store
	armed     atomic.Bool
	ignoreCtx bool
	release   chan struct{}
}

func (s *stallingStore) Update(ctx context.Context, r *keystore.Record) error {
	if s.armed.Load() {
		if s.ignoreCtx {
			<-s.release
		} else {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-s.release:
			}
		}
	}
	return s.Store.Update(ctx, r)
}

// answerWithin is the caller's deadline in the stall tests: the payment
// is answered before it, and the keystore write of the answer stalls past
// it. It is generous so that a loaded machine still answers in time; the
// tests never assert how long a call took, only the bounds the code set
// (storeWaits).
const answerWithin = 2 * time.Second

// Do returns at most one write grace after its deadline whatever the
// keystore does: every keystore wait that ran out had the deadline plus
// the grace as its limit; the answer comes back with an error saying the
// write did not complete, and the intent stays Pending, resumable with
// its key.
func TestDoIsBoundedWhenTheKeystoreStalls(t *testing.T) {
	t.Parallel()
	const grace = 200 * time.Millisecond
	for _, ignoreCtx := range []bool{false, true} {
		t.Run(map[bool]string{false: "honours ctx", true: "ignores ctx"}[ignoreCtx], func(t *testing.T) {
			t.Parallel()
			srv := idemtest.NewServer(t)
			store := &stallingStore{Store: keystore.NewMemory(), ignoreCtx: ignoreCtx, release: make(chan struct{})}
			t.Cleanup(func() { close(store.release) })
			c := newTestClient(t, WithStore(nopCloseStore{store}), WithWriteGrace(grace))
			in := begin(t, c, "", paymentRequest(t, srv.URL, 100, "stall"))
			store.armed.Store(true)

			var waits storeWaits
			ctx, cancel := context.WithTimeout(waits.watch(context.Background()), answerWithin)
			defer cancel()
			deadline, _ := ctx.Deadline()
			done := make(chan struct{})
			var resp *http.Response
			var err error
			go func() {
				defer close(done)
				resp, err = c.Do(ctx, in)
			}()
			select {
			case <-done:
			case <-time.After(hangGuard):
				t.Fatal("Do did not return although its deadline and the write grace had passed")
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrStoreTimeout)
			assert.Contains(t, err.Error(), "storing the answer")
			require.NotNil(t, resp, "the server's answer still comes back")
			assert.Equal(t, http.StatusCreated, resp.StatusCode)
			assert.Equal(t, Pending, in.State, "the intent as the keystore holds it, not as the lost write would have left it")
			requireOneGrace(t, &waits, deadline, deadline.Add(grace))

			store.armed.Store(false)
			got, rerr := c.Resume(context.Background(), in.Key)
			require.NoError(t, rerr)
			if got.State == Pending {
				resp, err = c.Do(context.Background(), got)
				require.NoError(t, err)
				assert.True(t, IsReplay(resp), "the resume gets the server's replay")
			}
			assert.Equal(t, 1, srv.PaymentCount())
		})
	}
}

// A bbolt keystore whose disk stalls (its writes block, whatever their
// context, as a write waiting on fdatasync does) while the payment is on
// the wire: Do gives the keystore one write grace after its deadline, or
// after its context was canceled, for all its waits, and returns an
// error matching ErrStoreTimeout. Once the disk answers, the intent's resume pays
// nothing more.
func TestDoOnAStalledBoltKeystoreTakesOneGrace(t *testing.T) {
	t.Parallel()
	const grace = 500 * time.Millisecond
	for _, canceled := range []bool{false, true} {
		t.Run(map[bool]string{false: "deadline", true: "canceled"}[canceled], func(t *testing.T) {
			t.Parallel()
			bolt, err := keystore.OpenBolt(filepath.Join(t.TempDir(), "intents.db"), nil)
			require.NoError(t, err)
			store := &stallingStore{Store: bolt, ignoreCtx: true, release: make(chan struct{})}
			released := false
			t.Cleanup(func() {
				if !released {
					close(store.release)
				}
			})
			var waits storeWaits
			var ctx context.Context
			var cancel context.CancelFunc
			if canceled {
				ctx, cancel = context.WithCancel(waits.watch(context.Background()))
			} else {
				ctx, cancel = context.WithTimeout(waits.watch(context.Background()), answerWithin)
			}
			defer cancel()
			canceledAt := make(chan time.Time, 1)
			origin := idemtest.NewServer(t)
			f := newFront(t, origin.URL, func(n int, w http.ResponseWriter, r *http.Request, forward http.Handler) bool {
				if n == 1 {
					store.armed.Store(true) // the payment is on the wire; the disk stalls
					if canceled {
						forward.ServeHTTP(httptest.NewRecorder(), r) // paid, and the answer lost with the call
						canceledAt <- time.Now()
						cancel()
						return true
					}
				}
				return false
			})
			c := newTestClient(t, WithStore(store), WithWriteGrace(grace))
			in := begin(t, c, "order-disk/payment", paymentRequest(t, f.URL, 100, "disk"))

			_, err = doWithin(t, c, ctx, in)
			require.ErrorIs(t, err, ErrStoreTimeout)
			assert.Equal(t, Pending, in.State, "the intent as the keystore last recorded it")
			if canceled {
				from := <-canceledAt
				end := firstRanOut(t, &waits).limit
				assert.False(t, end.Before(from.Add(grace)), "the grace runs from the cancel")
				requireOneGrace(t, &waits, from, end)
			} else {
				deadline, _ := ctx.Deadline()
				requireOneGrace(t, &waits, deadline, deadline.Add(grace))
			}

			store.armed.Store(false)
			close(store.release) // the disk answers
			released = true
			got, err := c.Resume(context.Background(), in.Key)
			require.NoError(t, err)
			if got.State == Pending {
				_, err = c.Do(context.Background(), got)
				require.NoError(t, err)
			}
			assert.Equal(t, 1, origin.PaymentCount())
		})
	}
}
