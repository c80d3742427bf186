package idem

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// retryAfterNow is a fixed instant the date tests are written against.
var retryAfterNow = time.Date(2015, time.October, 21, 7, 28, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		value  string
		want   time.Duration
		wantOK bool
	}{
		{"delta", "120", 120 * time.Second, true},
		{"zero", "0", 0, true},
		{"leading zeros", "007", 7 * time.Second, true},
		{"surrounding white space", " \t5\t ", 5 * time.Second, true},
		{"largest delta that fits", strconv.FormatInt(maxDeltaSeconds, 10), time.Duration(maxDeltaSeconds) * time.Second, true},
		{"IMF-fixdate", "Wed, 21 Oct 2015 07:28:30 GMT", 30 * time.Second, true},
		{"RFC 850", "Wednesday, 21-Oct-15 07:29:00 GMT", time.Minute, true},
		{"asctime", "Wed Oct 21 07:30:00 2015", 2 * time.Minute, true},
		{"date now", "Wed, 21 Oct 2015 07:28:00 GMT", 0, true},
		{"date in the past", "Wed, 21 Oct 2015 07:00:00 GMT", 0, true},
		{"date long past", "Thu, 01 Jan 1970 00:00:00 GMT", 0, true},
		{"date centuries ahead saturates", "Fri, 31 Dec 9999 23:59:59 GMT", time.Duration(1<<63 - 1), true},
		{"empty", "", 0, false},
		{"blank", "  ", 0, false},
		{"negative", "-5", 0, false},
		{"plus sign", "+5", 0, false},
		{"fraction", "1.5", 0, false},
		{"unit", "5s", 0, false},
		{"inner space", "1 2", 0, false},
		{"garbage", "soon", 0, false},
		{"hex", "0x10", 0, false},
		{"one past the largest delta", strconv.FormatInt(maxDeltaSeconds+1, 10), time.Duration(1<<63 - 1), true},
		{"int64 overflow", "99999999999999999999999", time.Duration(1<<63 - 1), true},
		{"malformed date", "Wed, 32 Oct 2015 07:28:00 GMT", 0, false},
		{"date without zone", "2015-10-21T07:28:30", 0, false},
		{"non-ASCII digits", "١٢", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := ParseRetryAfter(tt.value, retryAfterNow)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRetryAfterHint(t *testing.T) {
	t.Parallel()
	withHeader := func(v string) *http.Response {
		return &http.Response{StatusCode: 503, Header: http.Header{"Retry-After": {v}}}
	}
	tests := []struct {
		name    string
		resp    *http.Response
		ceiling time.Duration
		want    time.Duration
		wantOK  bool
	}{
		{"nil response", nil, time.Minute, 0, false},
		{"no header", &http.Response{StatusCode: 503, Header: http.Header{}}, time.Minute, 0, false},
		{"delta under the ceiling", withHeader("3"), time.Minute, 3 * time.Second, true},
		{"delta at the ceiling", withHeader("60"), time.Minute, time.Minute, true},
		{"delta above the ceiling is capped", withHeader("3600"), time.Minute, time.Minute, true},
		{"huge delta is capped", withHeader("9000000000"), time.Minute, time.Minute, true},
		{"far date is capped", withHeader("Fri, 31 Dec 9999 23:59:59 GMT"), time.Minute, time.Minute, true},
		{"past date", withHeader("Wed, 21 Oct 2015 07:00:00 GMT"), time.Minute, 0, true},
		{"zero ceiling means the default", withHeader("3600"), 0, DefaultRetryAfterCeiling, true},
		{"negative ceiling means the default", withHeader("3600"), -time.Second, DefaultRetryAfterCeiling, true},
		{"garbage is ignored", withHeader("later"), time.Minute, 0, false},
		{"negative is ignored", withHeader("-1"), time.Minute, 0, false},
		{"first of two values", &http.Response{Header: http.Header{"Retry-After": {"2", "50"}}}, time.Minute, 2 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := retryAfterHint(tt.resp, retryAfterNow, tt.ceiling)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestRetryAfterNextWait(t *testing.T) {
	t.Parallel()
	fixed := func(d time.Duration) Backoff { return func(int) time.Duration { return d } }
	tests := []struct {
		name       string
		deadlineIn time.Duration // 0: no deadline
		b          Backoff
		hint       time.Duration
		hasHint    bool
		want       time.Duration
		wantErr    error
	}{
		{"backoff alone", 0, fixed(time.Second), 0, false, time.Second, nil},
		{"jitter is added on top of the hint", 0, fixed(time.Second), 5 * time.Second, true, 6 * time.Second, nil},
		{"a hint shorter than the backoff still adds", 0, fixed(5 * time.Second), time.Second, true, 6 * time.Second, nil},
		{"zero hint keeps the backoff", 0, fixed(time.Second), 0, true, time.Second, nil},
		{"hint alone with a zero draw", 0, fixed(0), 3 * time.Second, true, 3 * time.Second, nil},
		{"absent hint is ignored", 0, fixed(time.Second), time.Hour, false, time.Second, nil},
		{"negative backoff counts as zero", 0, fixed(-time.Second), 0, false, 0, nil},
		{"wait fits before the deadline", time.Hour, fixed(time.Second), 2 * time.Second, true, 3 * time.Second, nil},
		{"hint beyond the deadline", time.Hour, fixed(time.Second), 2 * time.Hour, true, 2*time.Hour + time.Second, ErrWaitBeyondDeadline},
		{"backoff beyond the deadline", time.Hour, fixed(3 * time.Hour), 0, false, 3 * time.Hour, ErrWaitBeyondDeadline},
		{"wait ending at the deadline", time.Hour, fixed(time.Hour), 0, false, time.Hour, ErrWaitBeyondDeadline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// now is passed in, so the deadline is exact however slow the
			// machine; an hour keeps ctx itself live for the test.
			now := time.Now()
			ctx := t.Context()
			if tt.deadlineIn > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithDeadline(ctx, now.Add(tt.deadlineIn))
				defer cancel()
			}
			got, err := nextWait(ctx, now, tt.b, 0, tt.hint, tt.hasHint)
			assert.Equal(t, tt.want, got)
			if tt.wantErr == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tt.wantErr)
			}
		})
	}
}

func TestRetryAfterNextWaitDoesNotSleep(t *testing.T) {
	t.Parallel()
	// A wait of two hours against a deadline one hour away: nextWait must
	// answer at once. Were it to sleep, ctx would end first and fail the
	// test (after the test binary's own timeout, at the latest).
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(time.Hour))
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := nextWait(ctx, time.Now(), func(int) time.Duration { return 2 * time.Hour }, 0, 0, false)
		done <- err
	}()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, ErrWaitBeyondDeadline)
	case <-ctx.Done():
		t.Fatal("nextWait slept")
	}
}

func TestRetryAfterNextWaitStopsOnDoneContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := nextWait(ctx, retryAfterNow, Exponential(time.Second, time.Minute), 0, 0, false)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestRetryAfterNextWaitDefaultBackoff(t *testing.T) {
	t.Parallel()
	for n := range 10 {
		got, err := nextWait(context.Background(), retryAfterNow, nil, n, 0, false)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, got, time.Duration(0))
		assert.Less(t, got, min(DefaultBackoffCap, DefaultBackoffBase<<n))
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, seed := range []string{
		"0", "5", "120", " 7 ", "\t3", "-1", "+1", "1.5", "1e3", "abc", "",
		"99999999999999999999", strconv.FormatInt(maxDeltaSeconds, 10),
		strconv.FormatInt(maxDeltaSeconds+1, 10),
		"Wed, 21 Oct 2015 07:28:30 GMT", "Wednesday, 21-Oct-15 07:29:00 GMT",
		"Wed Oct 21 07:30:00 2015", "Thu, 01 Jan 1970 00:00:00 GMT",
		"Fri, 31 Dec 9999 23:59:59 GMT", "Mon, 00 Jan 0000 00:00:00 GMT",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		got, ok := ParseRetryAfter(value, retryAfterNow)
		if got < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, negative", value, got)
		}
		if !ok && got != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v with ok=false", value, got)
		}
		trimmed := strings.Trim(value, " \t")
		if trimmed != "" && isDigits(trimmed) {
			// A delta: exactly what was asked for, or the longest wait when
			// it does not fit in a Duration (the ceiling caps it).
			secs, err := strconv.ParseUint(trimmed, 10, 64)
			switch {
			case err != nil || secs > uint64(maxDeltaSeconds):
				if !ok || got != time.Duration(1<<63-1) {
					t.Fatalf("ParseRetryAfter(%q) = %v, %v; want the longest wait", value, got, ok)
				}
			case !ok || got != time.Duration(secs)*time.Second:
				t.Fatalf("ParseRetryAfter(%q) = %v, %v; want %ds", value, got, ok, secs)
			}
		}
		if date, err := http.ParseTime(trimmed); err == nil && ok && got > max(date.Sub(retryAfterNow), 0) {
			t.Fatalf("ParseRetryAfter(%q) = %v, beyond the date", value, got)
		}
		hint, hintOK := retryAfterHint(&http.Response{Header: http.Header{"Retry-After": {value}}}, retryAfterNow, time.Minute)
		if hintOK != ok || hint < 0 || hint > time.Minute {
			t.Fatalf("retryAfterHint(%q) = %v, %v", value, hint, hintOK)
		}
	})
}

func ExampleParseRetryAfter() {
	now := time.Date(2015, time.October, 21, 7, 28, 0, 0, time.UTC)
	for _, v := range []string{"120", "Wed, 21 Oct 2015 07:28:30 GMT", "-1"} {
		wait, ok := ParseRetryAfter(v, now)
		fmt.Println(wait, ok)
	}
	// Output:
	// 2m0s true
	// 30s true
	// 0s false
}

// A Retry-After too large for a Duration is the longest wait the ceiling
// allows, never ignored.
func TestHugeRetryAfterIsCappedNotIgnored(t *testing.T) {
	t.Parallel()
	resp := recordedResponse(503, map[string]string{"Retry-After": "99999999999999999999"}, "")
	hint, ok := retryAfterHint(resp, time.Now(), 7*time.Second)
	assert.True(t, ok)
	assert.Equal(t, 7*time.Second, hint)
}
