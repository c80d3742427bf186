package main

import (
	"fmt"
	"strings"
)

// accountsEnv names the environment variable that carries the accounts
// and their tokens, so the tokens need not appear in the process list.
const accountsEnv = "IDEM_ACCOUNTS"

// parseAccounts reads --account values, "ACCOUNT=TOKEN[,TOKEN…]", into
// account → tokens. An account may be given more than once; its tokens
// add up.
func parseAccounts(values []string) (map[string][]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	accounts := make(map[string][]string, len(values))
	for i, v := range values {
		account, list, ok := strings.Cut(v, "=")
		account = strings.TrimSpace(account)
		if !ok || account == "" {
			return nil, fmt.Errorf("--account %d: want ACCOUNT=TOKEN[,TOKEN...], got no account before '='", i+1)
		}
		for _, token := range strings.Split(list, ",") {
			token = strings.TrimSpace(token)
			if token == "" {
				return nil, fmt.Errorf("--account %q: an empty token; want ACCOUNT=TOKEN[,TOKEN...]", account)
			}
			accounts[account] = append(accounts[account], token)
		}
	}
	return accounts, nil
}

// accountsFromEnv splits $IDEM_ACCOUNTS, entries separated by ';' or
// white space, into --account values.
func accountsFromEnv(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == ' ' || r == '\t' || r == '\n' })
}
