package idem

import (
	"bufio"
	"bytes"
	"net/http"
	"testing"
)

// validHost accepts the Host values net/http sends as they are, and no
// other: net/http silently sends an empty Host instead of one it finds
// invalid, which would reach the wrong virtual host.
func FuzzValidHost(f *testing.F) {
	for _, seed := range []string{"", "example.com", "example.com:8443", "[::1]:443",
		"bad host", "a\r\nb", "host/path", "h\x00", "ü.example", "a@b", "x\"y", "~!$&'()*+,;=_-."} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, host string) {
		if host == "" {
			return // no override
		}
		req, err := http.NewRequest(http.MethodPost, "http://127.0.0.1:9/v1/payments", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		var wire bytes.Buffer
		if err := req.Write(&wire); err != nil {
			if validHost(host) {
				t.Fatalf("validHost(%q) but net/http cannot send it: %v", host, err)
			}
			return
		}
		sent, err := http.ReadRequest(bufio.NewReader(&wire))
		if err != nil {
			t.Fatalf("reading back a request with Host %q: %v", host, err)
		}
		if validHost(host) && sent.Host == "" {
			t.Fatalf("validHost(%q) but net/http sends no Host", host)
		}
		if !validHost(host) && sent.Host == host {
			t.Fatalf("net/http sends Host %q as it is, but validHost rejects it", host)
		}
	})
}
