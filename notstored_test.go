package idem

import (
	"net/http"
	"strings"
	"testing"
)

// TestNotStoredAnySpelling holds notStored to every spelling of the
// headers the keystore does not keep, and to keeping the others.
func TestNotStoredAnySpelling(t *testing.T) {
	for _, name := range []string{"Connection", "Keep-Alive", "Transfer-Encoding", "Set-Cookie", "Set-Cookie2",
		"Trailer", "Authentication-Info", "Proxy-Authentication-Info"} {
		for _, spelt := range []string{name, strings.ToLower(name), strings.ToUpper(name)} {
			if !notStored(spelt) {
				t.Errorf("notStored(%q) = false, want true", spelt)
			}
		}
	}
	for _, name := range []string{"Content-Type", "content-length", "Date", "Location", "Idempotency-Key",
		"Set-Cookie3", "Connections", "X-Trailer", "Authorization", ""} {
		if notStored(name) {
			t.Errorf("notStored(%q) = true, want false", name)
		}
	}
	h := http.Header{"Content-Type": {"application/json"}, "keep-alive": {"timeout=5"}}
	if allStorable(h) {
		t.Error("allStorable kept a lower-case Keep-Alive")
	}
	if got := storableHeader(h); len(got) != 1 || got.Get("Content-Type") != "application/json" {
		t.Errorf("storableHeader = %v, want only Content-Type", got)
	}
}
