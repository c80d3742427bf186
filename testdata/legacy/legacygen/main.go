// Command legacygen writes a bbolt keystore with this build of idem: named
// intents settled and pending, begun with a bearer token, against the
// reference server, and a manifest of what it wrote.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/idemtest"
)

// The URL every intent names, routed to the reference server, so a later
// build can begin the same payloads against its own server.
const target = "http://payments.legacy.test/v1/payments"

const token = "tok_legacy_build"

type entry struct {
	Name, Key, State string
	Amount           int
	Sent             bool
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: legacygen KEYSTORE MANIFEST")
		os.Exit(2)
	}
	srv, err := idemtest.Start()
	check(err)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
	c, err := idem.New(idem.WithBoltStore(os.Args[1], nil), idem.WithHTTPClient(hc), idem.WithMaxAttempts(1))
	check(err)
	ctx := context.Background()
	var out []entry
	beginOne := func(name string, amount int) *idem.Intent {
		body := fmt.Sprintf(`{"amount": %d, "currency": "EUR", "reference": %q}`, amount, name)
		req, err := http.NewRequest(http.MethodPost, target, strings.NewReader(body))
		check(err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		in, err := c.Begin(ctx, name, req)
		check(err)
		return in
	}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("legacy/settled-%d", i)
		in := beginOne(name, 100*i)
		_, err := c.Do(ctx, in)
		check(err)
		out = append(out, entry{name, in.Key, string(in.State), 100 * i, true})
	}
	for i := 1; i <= 2; i++ {
		name := fmt.Sprintf("legacy/pending-%d", i)
		in := beginOne(name, 1000+i) // begun, never sent: the process died
		out = append(out, entry{name, in.Key, string(in.State), 1000 + i, false})
	}
	// Sent, the answer lost: the server charged, the keystore does not know.
	in := beginOne("legacy/lost-1", 2001)
	srv.LoseNextResponses(1)
	if _, err := c.Do(ctx, in); err == nil {
		check(fmt.Errorf("the lost answer was not lost"))
	}
	out = append(out, entry{"legacy/lost-1", in.Key, string(in.State), 2001, true})
	check(c.Close())
	if n := srv.PaymentCount(); n != 4 {
		check(fmt.Errorf("%d payments, want 4", n))
	}
	js, err := json.MarshalIndent(out, "", "  ")
	check(err)
	check(os.WriteFile(os.Args[2], append(js, '\n'), 0o644))
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "legacygen:", err)
		os.Exit(1)
	}
}
