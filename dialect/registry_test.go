package dialect

import (
	"net/http"
	"strings"
	"testing"
)

// provAnswer builds an answer to a POST: status, a JSON body ("" for
// none) and header name/value pairs.
func provAnswer(status int, body string, header ...string) Answer {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Add(header[i], header[i+1])
	}
	if body != "" {
		h.Set("Content-Type", "application/json")
	}
	var b []byte
	if body != "" && (status < 200 || status > 299) {
		b = []byte(body) // Classify is shown no 2xx body
	}
	return Answer{Method: http.MethodPost, Status: status, Header: h, Body: b}
}

// verdictCase is one row of a provider's Classify table.
type verdictCase struct {
	name string
	a    Answer
	want Verdict
}

func checkVerdicts(t *testing.T, d Dialect, cases []verdictCase) {
	t.Helper()
	for _, c := range cases {
		if got := d.Classify(c.a); got != c.want {
			t.Errorf("%s: %s: Classify = %s, want %s", d.Name, c.name, got, c.want)
		}
	}
}

// statusCase is one row of a provider's OperationStatus table.
type statusCase struct {
	name string
	body string
	want OperationStatus
}

func checkStatuses(t *testing.T, d Dialect, cases []statusCase) {
	t.Helper()
	for _, c := range cases {
		if got := d.OperationStatus([]byte(c.body)); got != c.want {
			t.Errorf("%s: %s: OperationStatus = %s, want %s", d.Name, c.name, got, c.want)
		}
	}
}

// checkKeyLimit checks that d accepts a key of max bytes and refuses one
// byte more.
func checkKeyLimit(t *testing.T, d Dialect, max int) {
	t.Helper()
	if d.MaxKeyLength != max {
		t.Fatalf("%s: MaxKeyLength = %d, want %d", d.Name, d.MaxKeyLength, max)
	}
	if err := d.CheckKey(strings.Repeat("k", max)); err != nil {
		t.Errorf("%s: CheckKey(%d bytes) = %v, want nil", d.Name, max, err)
	}
	if err := d.CheckKey(strings.Repeat("k", max+1)); err == nil {
		t.Errorf("%s: CheckKey(%d bytes) = nil, want an error", d.Name, max+1)
	}
}

func TestBuiltinsAreValid(t *testing.T) {
	for _, name := range Names() {
		d, err := ByName(name)
		if err != nil {
			t.Fatalf("ByName(%q): %v", name, err)
		}
		if err := d.Validate(); err != nil {
			t.Errorf("%s: Validate = %v", name, err)
		}
		if d.Name != name {
			t.Errorf("ByName(%q).Name = %q", name, d.Name)
		}
	}
}

func TestByNameProviders(t *testing.T) {
	want := map[string]string{
		"stripe": "Idempotency-Key", " PayPal ": "PayPal-Request-Id",
		"ADYEN": "Idempotency-Key", "square": "", "Stripe-V2": "Idempotency-Key", "Checkout": "Cko-Idempotency-Key",
	}
	for name, header := range want {
		d, err := ByName(name)
		if err != nil {
			t.Errorf("ByName(%q): %v", name, err)
			continue
		}
		if d.KeyHeader != header {
			t.Errorf("ByName(%q).KeyHeader = %q, want %q", name, d.KeyHeader, header)
		}
	}
	if got := strings.Join(Names(), ","); got != "adyen,checkout,draft,paypal,square,stripe,stripe-v2" {
		t.Errorf("Names = %s", got)
	}
	if _, err := ByName("braintree"); err == nil {
		t.Error("ByName(braintree) = nil error")
	}
}

func TestBuiltinDocsAreHTTPS(t *testing.T) {
	for _, name := range Names() {
		d, _ := ByName(name)
		if len(d.Docs) == 0 {
			t.Errorf("%s: no Docs", name)
		}
		for _, u := range d.Docs {
			if !strings.HasPrefix(u, "https://") {
				t.Errorf("%s: doc %q is not https", name, u)
			}
		}
	}
}
