package main

import (
	"io"
	"strings"

	"github.com/idemkit/idem/internal/redact"
)

// outputSecrets returns the credentials the command line and environment
// hand the command in its store locations (--store, --keystore,
// $IDEM_KEYSTORE, idem check's URL): every output is scrubbed of them,
// whatever shape a library's error puts them in.
func outputSecrets(args []string, getenv func(string) string) []string {
	var out []string
	for _, a := range append(args, getenv(keystoreEnv)) {
		if strings.HasPrefix(a, "-") {
			_, v, ok := strings.Cut(a, "=")
			if !ok {
				continue
			}
			a = v
		}
		out = append(out, redact.Secrets(a)...)
	}
	return out
}

// redactWriter hides credentials in what passes through it: every shape
// a connection string can put in text (redact.Text), and, when secrets
// are given, those values wherever they appear. Each Write is redacted on
// its own: the command's writers (slog lines, cobra's error line, JSON
// documents) write a message in one call.
type redactWriter struct {
	w       io.Writer
	secrets []string
}

func (r redactWriter) Write(p []byte) (int, error) {
	text := redact.Scrub(redact.Text(string(p)), r.secrets)
	if _, err := io.WriteString(r.w, text); err != nil {
		return 0, err
	}
	return len(p), nil
}
