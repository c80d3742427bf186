package dialect

import (
	"fmt"
	"slices"
	"strings"
)

// builtins are the shipped dialects by name.
var builtins = map[string]func() Dialect{
	"adyen":     Adyen,
	"checkout":  Checkout,
	"draft":     Draft,
	"paypal":    PayPal,
	"square":    Square,
	"stripe":    Stripe,
	"stripe-v2": StripeV2,
}

// Names lists the shipped dialects' names, sorted.
func Names() []string {
	names := make([]string, 0, len(builtins))
	for n := range builtins {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// ByName returns the shipped dialect with this name (case-insensitive),
// for flags such as `idem check --dialect stripe`.
func ByName(name string) (Dialect, error) {
	mk, ok := builtins[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Dialect{}, fmt.Errorf("unknown dialect %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return mk(), nil
}
