package testserver

import "github.com/idemkit/idem/server"

// idemDialect is this project's protocol (PROTOCOL.md), package server's
// own: the IETF draft's Idempotency-Key header, RFC 9457 problem
// documents, Idempotent-Replayed on replays, 409 /in-progress and 422
// /key-reused.
func idemDialect() Dialect {
	var a server.ProblemAnswers
	return Dialect{
		Name:             DefaultDialect,
		KeyHeader:        KeyHeader,
		MaxKeyLength:     MaxKeyLength,
		RequireKey:       true,
		parseKey:         func(_ *Dialect, values []string) (string, error) { return ParseKey(values) },
		missingKey:       a.MissingKey,
		invalidKey:       a.InvalidKey,
		inProgress:       a.InProgress,
		keyReused:        a.KeyReused,
		storeUnavailable: a.StoreUnavailable,
		replayed:         a.Replayed,
	}
}
