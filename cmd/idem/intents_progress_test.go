package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemkit/idem/keystore"
)

// lastFrame is the last rendering of a progress bar written to b: frames
// are redrawn in place after a carriage return.
func lastFrame(b string) string {
	b = strings.TrimRight(b, "\n")
	if i := strings.LastIndex(b, "\r"); i >= 0 {
		b = b[i+1:]
	}
	return strings.TrimSpace(b)
}

// The bar ends at 100% with every intent counted, however fast the
// intents settle (the throttle skips frames in between) and from however
// many goroutines, and the unsettled intents are listed after it.
func TestProgressBarEndsAtHundredPercent(t *testing.T) {
	t.Parallel()
	for _, total := range []int{1, 7, 250} {
		t.Run(fmt.Sprint(total), func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			rep := newReporter(&stdout, &stderr, total, true)
			var wg sync.WaitGroup
			for i := range total {
				wg.Add(1)
				go func() {
					defer wg.Done()
					o := outcome{key: fmt.Sprintf("k-%d", i), state: keystore.Succeeded, status: 201}
					if i == 0 {
						o.state, o.err = keystore.Pending, errors.New("gave up")
					}
					rep.done(o)
				}()
			}
			wg.Wait()
			rep.finish()

			frame := lastFrame(stderr.String())
			assert.Contains(t, frame, "100%", "last frame: %q", frame)
			assert.Contains(t, frame, fmt.Sprintf("(%d/%d", total, total), "last frame: %q", frame)
			assert.True(t, strings.HasSuffix(stderr.String(), "\n"), "the bar ends its line: %q", stderr.String())
			require.Equal(t, 1, strings.Count(stdout.String(), "\n"), "one unsettled intent listed: %q", stdout.String())
			assert.Contains(t, stdout.String(), "pending    k-0")
		})
	}
}

// Without a terminal there is no bar: one line per intent.
func TestLineReporterPrintsOneLinePerIntent(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	rep := newReporter(&stdout, &stderr, 2, false)
	rep.done(outcome{key: "k-1", state: keystore.Succeeded, status: 201})
	rep.done(outcome{key: "k-2", state: keystore.Failed, status: 422})
	rep.finish()
	assert.Empty(t, stderr.String())
	assert.Equal(t, "succeeded  k-1  201 Created\nfailed     k-2  422 Unprocessable Entity\n", stdout.String())
}
