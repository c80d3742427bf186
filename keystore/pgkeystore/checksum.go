package pgkeystore

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/idemkit/idem/keystore"
)

// postgresChecksumV1 is the first byte of a checksum column: the SHA-256
// of postgresCanonicalV1 follows. A column added later gets a new version
// that covers it, so rows written before keep verifying.
const postgresChecksumV1 byte = 1

// postgresCanonicalV1 is the canonical encoding of a row's record
// columns: every value as a read gives it back, with the distinctions
// the columns do not keep (NULL or empty, a time's zone) erased, so a
// sound row always verifies and a changed value never does.
type postgresCanonicalV1 struct {
	Key, Name, Method, URL, Fingerprint, State string
	Header                                     [][]string
	Body                                       []byte
	CreatedAt, UpdatedAt, AcceptedAt, Purged   int64 // µs since the epoch; 0 for zero
	Attempts                                   int
	Response                                   bool
	Status                                     int
	ResponseHeader                             [][]string
	ResponseBody                               []byte
	Operation, LastError, Host                 string
	MayHaveExecuted                            bool
	Reconciliations                            [][5]string
	Principal                                  string
	SecretHeaders                              []string
}

// postgresChecksum is the checksum column of a row holding r, given as a
// read returns it (storedPostgresRecord).
func postgresChecksum(r *keystore.Record) []byte {
	c := postgresCanonicalV1{
		Key: r.Key, Name: r.Name, Method: r.Method, URL: r.URL, Fingerprint: r.Fingerprint,
		State: string(r.State), Header: canonicalHeader(r.Header), Body: canonicalBytes(r.Body),
		CreatedAt: canonicalTime(r.CreatedAt), UpdatedAt: canonicalTime(r.UpdatedAt),
		AcceptedAt: canonicalTime(r.AcceptedAt), Purged: canonicalTime(r.Purged),
		Attempts: r.Attempts, Operation: r.Operation, LastError: r.LastError, Host: r.Host,
		MayHaveExecuted: r.MayHaveExecuted, Principal: r.Principal,
	}
	if r.Response != nil {
		c.Response, c.Status = true, r.Response.Status
		c.ResponseHeader = canonicalHeader(r.Response.Header)
		c.ResponseBody = canonicalBytes(r.Response.Body)
	}
	for _, v := range r.Reconciliations {
		c.Reconciliations = append(c.Reconciliations,
			[5]string{v.Outcome, v.Source, v.By, v.At.UTC().Format(time.RFC3339Nano), v.Note})
	}
	if len(r.SecretHeaders) > 0 {
		c.SecretHeaders = r.SecretHeaders
	}
	// Strings, ints and byte slices always marshal.
	js, _ := json.Marshal(c)
	sum := sha256.Sum256(js)
	return append([]byte{postgresChecksumV1}, sum[:]...)
}

// checkPostgresChecksum verifies the checksum column of the row read as r.
// A row without one was written before checksums and is taken as it is.
func checkPostgresChecksum(r *keystore.Record, stored []byte) error {
	if stored == nil {
		return nil
	}
	if len(stored) == 0 || stored[0] != postgresChecksumV1 {
		return fmt.Errorf("%w: unknown checksum version", keystore.ErrCorrupt)
	}
	if !bytes.Equal(stored, postgresChecksum(r)) {
		return fmt.Errorf("%w: the row fails its checksum", keystore.ErrCorrupt)
	}
	return nil
}

// canonicalHeader is h as sorted name and value lists, empty ones nil.
func canonicalHeader(h http.Header) [][]string {
	if len(h) == 0 {
		return nil
	}
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([][]string, len(names))
	for i, name := range names {
		out[i] = append([]string{name}, h[name]...)
	}
	return out
}

func canonicalBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func canonicalTime(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}
