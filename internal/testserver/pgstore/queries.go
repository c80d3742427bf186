package pgstore

import "fmt"

// queries holds the payments API's SQL with the schema's table names
// filled in once, at Open.
type queries struct {
	insertPayment, getPayment, listPayments, countPayments string
	insertOperation, getOperation                          string
}

func newQueries(schema string) queries {
	payments := table(schema, "payments")
	operations := table(schema, "operations")
	return queries{
		insertPayment: fmt.Sprintf(`
INSERT INTO %[1]s (principal, id, amount, currency, reference, status, created)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, payments),
		getPayment: fmt.Sprintf(`
SELECT id, principal, amount, currency, reference, status, created
FROM %[1]s WHERE principal = $1 AND id = $2`, payments),
		listPayments: fmt.Sprintf(`
SELECT id, principal, amount, currency, reference, status, created
FROM %[1]s WHERE principal = $1 ORDER BY created DESC, seq DESC`, payments),
		countPayments: fmt.Sprintf(`SELECT count(*) FROM %[1]s`, payments),

		insertOperation: fmt.Sprintf(`
INSERT INTO %[1]s (principal, id, kind, amount, currency, reference, created, settle_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, operations),
		getOperation: fmt.Sprintf(`
SELECT id, principal, kind, amount, currency, reference, created, settle_at
FROM %[1]s WHERE principal = $1 AND id = $2`, operations),
	}
}
