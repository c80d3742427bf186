package pgkeystore

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/idemkit/idem/keystore"
)

// postgresRecordColumns lists a record's columns in the order
// postgresRecordArgs and scanPostgresRecord use. Claim columns are not part
// of a Record.
var postgresRecordColumns = []string{
	"key", "name", "method", "url", "header", "body", "fingerprint", "state",
	"created_at", "updated_at", "attempts", "response_status",
	"response_header", "response_body", "operation", "last_error",
	"host", "accepted_at", "may_have_executed", "reconciliations",
	"principal", "secret_headers",
	"purged_at",
	// checksum covers the columns above (postgresChecksum); not a field
	// of Record.
	"checksum",
}

// postgresSQL holds every statement, built once for one schema.table.
type postgresSQL struct {
	// table is the keystore table's qualified, quoted name.
	table                                                    string
	insert, update, getByKey, getByName, exists, list, purge string
	// tombstones picks the next records a purge makes tombstones of.
	tombstones               string
	claim, claimKey, unclaim string
	// insertClaimed and updateClaimed are insert and update for the
	// holder of a claim; guard reads what update checks.
	insertClaimed, updateClaimed, guard string
	// namesakes, rebindLock and rebind serve keystore.NameScanner and
	// keystore.Rebinder (namesake.go).
	namesakes, rebindLock, rebind string
}

func newPostgresSQL(schema, table string) postgresSQL {
	t := pgx.Identifier{schema, table}.Sanitize()
	cols := strings.Join(postgresRecordColumns, ", ")
	returning := "r." + strings.Join(postgresRecordColumns, ", r.")
	placeholders := make([]string, len(postgresRecordColumns))
	sets := make([]string, 0, len(postgresRecordColumns)-1)
	for i, c := range postgresRecordColumns {
		placeholders[i] = fmt.Sprintf("$%d", i+1)
		if i > 0 {
			sets = append(sets, fmt.Sprintf("%s = $%d", c, i+1))
		}
	}
	// A claim is live while claim_until lies ahead on the database clock;
	// the database clock is the one every worker shares.
	const free = `(claim_until IS NULL OR claim_until <= now())`
	const until = `now() + $2::bigint * interval '1 microsecond'`
	n := len(postgresRecordColumns)
	// mayRewrite in SQL, against the given state, so the check and the
	// write are one statement: a settled record is never changed back.
	given := fmt.Sprintf("$%d", slices.Index(postgresRecordColumns, "state")+1)
	rewrite := `(state = ` + given + ` OR state NOT IN ('succeeded', 'failed', 'expired')
			OR (state = 'expired' AND ` + given + ` IN ('succeeded', 'failed'))
			OR (state = 'failed' AND ` + given + ` = 'succeeded' AND operation <> '' AND response_status IN (404, 410)))`
	update := `UPDATE ` + t + ` SET ` + strings.Join(sets, ", ") + `
			WHERE key = $1 AND name IS NOT DISTINCT FROM $2 AND ` + rewrite
	return postgresSQL{
		table: t,
		// No conflict target: a clash on the key or on the name both do
		// nothing, and Create works out which one it was.
		insert: `INSERT INTO ` + t + ` (` + cols + `) VALUES (` + strings.Join(placeholders, ", ") + `) ON CONFLICT DO NOTHING`,
		update: update,
		insertClaimed: `INSERT INTO ` + t + ` (` + cols + `, claim_owner, claim_until) VALUES (` + strings.Join(placeholders, ", ") +
			fmt.Sprintf(`, $%d, now() + $%d::bigint * interval '1 microsecond') ON CONFLICT DO NOTHING`, n+1, n+2),
		// Unclaim empties claim_owner, so a released claim fences too:
		// another owner may have claimed, written and released since.
		updateClaimed: update + fmt.Sprintf(` AND claim_owner = $%d`, n+1),
		guard:         `SELECT name, state, claim_owner FROM ` + t + ` WHERE key = $1`,
		getByKey:      `SELECT ` + cols + ` FROM ` + t + ` WHERE key = $1`,
		getByName:     `SELECT ` + cols + ` FROM ` + t + ` WHERE name = $1`,
		namesakes: `SELECT ` + cols + ` FROM ` + t + ` WHERE name IS NOT NULL AND ` + postgresBusinessName + ` = $1
			ORDER BY created_at, key LIMIT $2`,
		rebindLock: `SELECT claim_owner IS NOT NULL AND claim_until > now() FROM ` + t + ` WHERE key = $1 FOR UPDATE`,
		rebind:     `UPDATE ` + t + ` SET ` + strings.Join(sets, ", ") + ` WHERE key = $1`,
		exists:     `SELECT EXISTS (SELECT 1 FROM ` + t + ` WHERE key = $1)`,
		list: `SELECT ` + cols + ` FROM ` + t + `
			WHERE ($1::text[] IS NULL OR state = ANY($1)) AND ($2::timestamptz IS NULL OR created_at < $2)
			ORDER BY created_at, key`,
		// PurgeRequest.action in SQL: $1 is OlderThan, $2 KeepNamesAfter
		// (NULL: keep every name), $4 IncludeUnknown (expired records, and
		// failed ones whose operation was gone: Record.OperationGone).
		purge: `DELETE FROM ` + t + ` WHERE key IN (
			SELECT key FROM ` + t + ` WHERE state NOT IN ('pending', 'accepted')
				AND ($4::boolean OR (state <> 'expired' AND NOT (state = 'failed' AND operation <> '' AND response_status IN (404, 410)))) AND (
				(purged_at IS NULL AND updated_at < $1 AND (name IS NULL OR created_at <= $2))
				OR (purged_at IS NOT NULL AND created_at <= $2))
			LIMIT $3 FOR UPDATE SKIP LOCKED)`,
		tombstones: `SELECT ` + cols + ` FROM ` + t + `
			WHERE state NOT IN ('pending', 'accepted')
				AND ($5::boolean OR (state <> 'expired' AND NOT (state = 'failed' AND operation <> '' AND response_status IN (404, 410))))
				AND purged_at IS NULL AND updated_at < $1
				AND name IS NOT NULL AND ($2::timestamptz IS NULL OR created_at > $2) AND key > $3
			ORDER BY key LIMIT $4 FOR UPDATE SKIP LOCKED`,
		// SKIP LOCKED lets concurrent claimers pass over the rows another
		// claimer is taking right now instead of queueing behind it; the
		// row lock plus the re-check of the claim on the locked row version
		// is what keeps two owners off one record.
		claim: `WITH picked AS MATERIALIZED (
				SELECT key FROM ` + t + `
				WHERE state IN ('pending', 'accepted') AND ` + free + `
				ORDER BY created_at, key
				LIMIT $3
				FOR UPDATE SKIP LOCKED)
			UPDATE ` + t + ` AS r SET claim_owner = $1, claim_until = ` + until + `
			FROM picked WHERE r.key = picked.key
			RETURNING ` + returning,
		claimKey: `UPDATE ` + t + ` SET claim_owner = $3, claim_until = ` + until + `
			WHERE key = $1 AND (claim_owner = $3 OR ` + free + `)`,
		unclaim: `UPDATE ` + t + ` SET claim_owner = NULL, claim_until = NULL WHERE key = $1 AND claim_owner = $2`,
	}
}

// postgresRecordArgs returns r's column values in postgresRecordColumns
// order.
func postgresRecordArgs(r *keystore.Record) []any {
	var name *string
	if r.Name != "" {
		name = &r.Name
	}
	var status *int
	var respHeader, respBody []byte
	if r.Response != nil {
		status = &r.Response.Status
		respHeader = postgresHeaderJSON(r.Response.Header)
		respBody = r.Response.Body
	}
	var acceptedAt, purged *time.Time
	if !r.AcceptedAt.IsZero() {
		acceptedAt = &r.AcceptedAt
	}
	if !r.Purged.IsZero() {
		purged = &r.Purged
	}
	return []any{
		r.Key, name, r.Method, r.URL, postgresHeaderJSON(r.Header), r.Body,
		r.Fingerprint, string(r.State), r.CreatedAt, r.UpdatedAt, r.Attempts,
		status, respHeader, respBody, postgresText(r.Operation), postgresText(r.LastError),
		r.Host, acceptedAt, r.MayHaveExecuted, postgresReconciliationsJSON(r.Reconciliations),
		r.Principal, r.SecretHeaders,
		purged,
		postgresChecksum(storedPostgresRecord(r)),
	}
}

// scanPostgresRecord reads one row of postgresRecordColumns. A row that
// does not decode or fails its checksum is ErrCorrupt; then the record
// returned holds only its key, so a scan of many rows can name it.
func scanPostgresRecord(row pgx.Row) (*keystore.Record, error) {
	var (
		r                  keystore.Record
		name               *string
		state              string
		header, respHeader []byte
		status             *int
		respBody           []byte
		acceptedAt, purged *time.Time
		reconciliations    []byte
		secretHeaders      []string
		checksum           []byte
	)
	err := row.Scan(&r.Key, &name, &r.Method, &r.URL, &header, &r.Body,
		&r.Fingerprint, &state, &r.CreatedAt, &r.UpdatedAt, &r.Attempts,
		&status, &respHeader, &respBody, &r.Operation, &r.LastError,
		&r.Host, &acceptedAt, &r.MayHaveExecuted, &reconciliations,
		&r.Principal, &secretHeaders, &purged, &checksum)
	if err != nil {
		return nil, err
	}
	damaged := func(err error) (*keystore.Record, error) {
		return &keystore.Record{Key: r.Key}, fmt.Errorf("record %s: %w", keystore.KeyRef(r.Key), err)
	}
	if name != nil {
		r.Name = *name
	}
	if len(secretHeaders) > 0 {
		r.SecretHeaders = secretHeaders
	}
	r.State = keystore.State(state)
	if acceptedAt != nil {
		r.AcceptedAt = *acceptedAt
	}
	if purged != nil {
		r.Purged = *purged
	}
	if r.Header, err = parsePostgresHeader(header); err != nil {
		return damaged(err)
	}
	if status != nil {
		r.Response = &keystore.Response{Status: *status, Body: respBody}
		if r.Response.Header, err = parsePostgresHeader(respHeader); err != nil {
			return damaged(err)
		}
	}
	if r.Reconciliations, err = parsePostgresReconciliations(reconciliations); err != nil {
		return damaged(err)
	}
	if err := checkPostgresChecksum(&r, checksum); err != nil {
		return damaged(err)
	}
	return &r, nil
}

// collectPostgresRecords reads every row of rows, leaving the damaged ones
// out and naming them in bad. last is the key of the last row read.
func collectPostgresRecords(rows pgx.Rows) (out []*keystore.Record, bad keystore.CorruptRecords, last string, err error) {
	defer rows.Close()
	for rows.Next() {
		r, err := scanPostgresRecord(rows)
		if r != nil {
			last = r.Key
		}
		switch {
		case errors.Is(err, keystore.ErrCorrupt) && r != nil:
			bad.Add(r.Key, err)
		case err != nil:
			return nil, bad, "", err
		default:
			out = append(out, r)
		}
	}
	return out, bad, last, rows.Err()
}

// postgresReconciliationsJSON encodes an audit trail for its jsonb column;
// an empty one stays NULL, as Clone and the bbolt encoding drop it too.
// Times are stored in UTC, and the free text is cleaned as postgresText
// cleans it: a person's note must never keep a verdict from being stored.
func postgresReconciliationsJSON(trail []keystore.Reconciliation) []byte {
	if len(trail) == 0 {
		return nil
	}
	// validatePostgresRecord refused the times JSON cannot hold, and
	// strings always marshal.
	b, _ := json.Marshal(storedPostgresReconciliations(trail))
	return b
}

// storedPostgresReconciliations is trail as its jsonb column holds it.
func storedPostgresReconciliations(trail []keystore.Reconciliation) []keystore.Reconciliation {
	if len(trail) == 0 {
		return nil
	}
	out := make([]keystore.Reconciliation, len(trail))
	for i, v := range trail {
		out[i] = keystore.Reconciliation{
			Outcome: postgresText(v.Outcome),
			Source:  postgresText(v.Source),
			By:      postgresText(v.By),
			At:      v.At.UTC(),
			Note:    postgresText(v.Note),
		}
	}
	return out
}

func parsePostgresReconciliations(b []byte) ([]keystore.Reconciliation, error) {
	if b == nil {
		return nil, nil
	}
	var trail []keystore.Reconciliation
	if err := json.Unmarshal(b, &trail); err != nil {
		return nil, fmt.Errorf("%w: reconciliations column: %w", keystore.ErrCorrupt, err)
	}
	if len(trail) == 0 {
		return nil, nil
	}
	return trail, nil
}

// postgresHeaderJSON encodes h for a jsonb column; nil stays NULL. jsonb
// cannot hold U+0000, which no valid header carries anyway, so it becomes
// U+FFFD like any other invalid byte JSON replaces.
func postgresHeaderJSON(h http.Header) []byte {
	if h == nil {
		return nil
	}
	clean := make(http.Header, len(h))
	for k, vs := range h {
		var cvs []string
		if vs != nil {
			cvs = make([]string, len(vs))
			for i, v := range vs {
				cvs[i] = postgresText(v)
			}
		}
		clean[postgresText(k)] = cvs
	}
	// Marshalling map[string][]string cannot fail.
	b, _ := json.Marshal(clean)
	return b
}

func parsePostgresHeader(b []byte) (http.Header, error) {
	if b == nil {
		return nil, nil
	}
	var h http.Header
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("%w: header column: %w", keystore.ErrCorrupt, err)
	}
	return h, nil
}

// postgresText makes s storable in a text column: Postgres text rejects
// U+0000 and invalid UTF-8. It is used for free-form fields that come from
// servers (error descriptions, Location, headers), where refusing to store
// a final outcome would be worse than replacing a byte.
func postgresText(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// validatePostgresRecord rejects what Postgres cannot store exactly in the
// fields that identify an intent.
func validatePostgresRecord(r *keystore.Record) error {
	for _, f := range []struct{ name, value string }{
		{"key", r.Key}, {"name", r.Name}, {"method", r.Method}, {"url", r.URL},
		{"fingerprint", r.Fingerprint}, {"state", string(r.State)}, {"host", r.Host},
		{"principal", r.Principal},
	} {
		if postgresText(f.value) != f.value {
			return fmt.Errorf("keystore: postgres: record %s is not valid UTF-8 text (or contains NUL)", f.name)
		}
	}
	for _, v := range r.Reconciliations {
		// JSON, and so the jsonb column, holds years 0 to 9999 only.
		if y := v.At.UTC().Year(); y < 0 || y > 9999 {
			return fmt.Errorf("keystore: postgres: record reconciliation time %s is out of range", v.At)
		}
	}
	return nil
}

// storedPostgresRecord is r as a read would return it: a deep copy with
// times at the microsecond precision of timestamptz and free text cleaned
// as postgresText cleans it.
func storedPostgresRecord(r *keystore.Record) *keystore.Record {
	c := r.Clone()
	c.CreatedAt = truncatePostgresTime(c.CreatedAt)
	c.UpdatedAt = truncatePostgresTime(c.UpdatedAt)
	if !c.AcceptedAt.IsZero() {
		c.AcceptedAt = truncatePostgresTime(c.AcceptedAt)
	}
	if !c.Purged.IsZero() {
		c.Purged = truncatePostgresTime(c.Purged)
	}
	c.Operation = postgresText(c.Operation)
	c.LastError = postgresText(c.LastError)
	// Both headers went through postgresHeaderJSON, which cannot produce
	// JSON that fails to parse.
	c.Header, _ = parsePostgresHeader(postgresHeaderJSON(c.Header))
	if c.Response != nil {
		c.Response.Header, _ = parsePostgresHeader(postgresHeaderJSON(c.Response.Header))
	}
	c.Reconciliations = storedPostgresReconciliations(c.Reconciliations)
	return c
}

// truncatePostgresTime drops what timestamptz cannot hold: the monotonic
// reading and the nanoseconds below a microsecond (pgx truncates them).
func truncatePostgresTime(t time.Time) time.Time {
	t = t.Round(0)
	return t.Add(-time.Duration(t.Nanosecond() % 1000))
}
