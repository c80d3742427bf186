package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/idemkit/idem/server"
)

func TestValidateCompletion(t *testing.T) {
	t.Parallel()
	completion := func(status int, retention time.Duration) server.Completion {
		return server.Completion{Response: server.Response{Status: status}, Retention: retention}
	}
	for _, tc := range []struct {
		name         string
		c            server.Completion
		minRetention time.Duration
		wantErr      string
	}{
		{"ok", completion(http.StatusCreated, time.Hour), time.Millisecond, ""},
		{"retention at the minimum", completion(http.StatusCreated, time.Millisecond), time.Millisecond, ""},
		{"lowest status", completion(100, time.Hour), time.Microsecond, ""},
		{"highest status", completion(999, time.Hour), time.Microsecond, ""},
		{"retention below the minimum", completion(http.StatusCreated, time.Millisecond-1), time.Millisecond, "retention must be at least 1ms, got 999.999µs"},
		{"no retention", completion(http.StatusCreated, 0), time.Microsecond, "retention must be at least 1µs, got 0s"},
		{"zero retention without a minimum", completion(http.StatusCreated, 0), 0, "retention must be at least 1ns"},
		{"negative retention without a minimum", completion(http.StatusCreated, -time.Second), -time.Hour, "retention must be at least 1ns"},
		{"no status", completion(0, time.Hour), time.Microsecond, "cannot store HTTP status 0"},
		{"two digits", completion(99, time.Hour), time.Microsecond, "cannot store HTTP status 99"},
		{"four digits", completion(1000, time.Hour), time.Microsecond, "cannot store HTTP status 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := server.ValidateCompletion(tc.c, tc.minRetention)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}
