package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemkit/idem"
	"github.com/idemkit/idem/keystore"
)

// adoptFlags are the flags of `idem intents adopt`.
type adoptFlags struct {
	token     string
	headers   []string
	principal string
	json      bool
}

func newIntentsAdoptCommand(env *intentsEnv) *cobra.Command {
	var f adoptFlags
	cmd := &cobra.Command{
		Use:   "adopt KEY (--token T | --header 'Name: value' | --principal ID)",
		Short: "Bind an intent to the credentials or account that will resume it",
		Long: `Adopt binds a named intent to the principal that will send it from now on,
keeping its key: a program's Begin of its name with those credentials then
finds it, and resume sends it with them.

A Begin refuses a name stored under another principal, or under none
(idem.ErrIdentityAmbiguous): a refreshed OAuth token, a rotated API key, or
a keystore written by a build before names were scoped by principal (see
list's PRINCIPAL column: none). The keystore cannot tell whether that is the
same account; you can. Adopt says it is, so the intent keeps its key and is
never begun again under a new one, which a server that scopes keys by
account would take for a new payment. A server that scopes keys by token
sees the key under the new token as new: adopt only what it will replay.

Give the credentials as the program sends them, --token T (Authorization:
Bearer T, default $` + tokenEnv + `) or --header (repeatable), for a program that
uses the default principal; or --principal ID, the account id its
idem.WithPrincipal names (without idem.WithPrincipalKey). Nothing is sent.`,
		Example: `  idem intents adopt 0b0f4a52-8d1e-4f8e-9a52-1c3a0e6f4b1d --token "$API_TOKEN"
  idem intents adopt 0b0f4a52-8d1e-4f8e-9a52-1c3a0e6f4b1d --principal acct_1`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.token == "" && f.principal == "" && len(f.headers) == 0 {
				f.token = env.getenv(tokenEnv)
			}
			return runAdopt(cmd.Context(), cmd.OutOrStdout(), env, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.token, "token", "", "bearer token the program sends, as 'Authorization: Bearer TOKEN' (default $"+tokenEnv+")")
	fl.StringArrayVarP(&f.headers, "header", "H", nil, "header 'Name: value' the program sends (repeatable)")
	fl.StringVar(&f.principal, "principal", "", "the account id the program's idem.WithPrincipal returns")
	fl.BoolVar(&f.json, "json", false, "print the adopted intent as a JSON object, as show --json does")
	return cmd
}

func runAdopt(ctx context.Context, out io.Writer, env *intentsEnv, key string, f adoptFlags) error {
	if strings.TrimSpace(key) == "" {
		return errors.New("adopt: empty key")
	}
	creds, err := resumeFlags{token: f.token, headers: f.headers}.credentials()
	if err != nil {
		return err
	}
	if len(creds) == 0 && f.principal == "" {
		return errors.New("adopt: give the credentials that will resume the intent (--token, --header) or its account (--principal)")
	}
	st, err := env.ks.open(ctx)
	if err != nil {
		return err
	}
	opts := []idem.Option{idem.WithStore(st)} // the client closes st
	if f.principal != "" {
		id := f.principal
		opts = append(opts, idem.WithPrincipal(func(*http.Request) (string, error) { return id, nil }))
	}
	client, err := idem.New(opts...)
	if err != nil {
		_ = st.Close()
		return err
	}
	defer client.Close()
	rec, err := st.Get(ctx, key)
	if errors.Is(err, keystore.ErrNotFound) {
		return failedf("no intent with key %q in %s (adopt takes a key: a name may be several intents'; see list)", key, env.ks.display())
	}
	if err != nil {
		return env.lookupError(key, err)
	}
	if rec.Name == "" {
		return failedf("intent %s has no name: it needs no adoption (resume sends it with the credentials it is given)", key)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rec.URL, nil)
	if err != nil {
		return fmt.Errorf("adopt: the intent's URL: %w", err)
	}
	req.Header = creds
	before := principalText(rec)
	adopted, err := client.Adopt(ctx, key, req)
	if errors.Is(err, keystore.ErrNameTaken) {
		return failed(fmt.Errorf("%w: another intent of this name is this principal's already; show it, and settle or purge the one you do not mean", err))
	}
	if err != nil {
		return err
	}
	if rec, err = st.Get(ctx, adopted.Key); err != nil {
		return fmt.Errorf("reading %s: %w", env.ks.display(), err)
	}
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(detail(rec))
	}
	_, err = fmt.Fprintf(out, "adopted  %s  %s  %s (was %s)\n", rec.Key,
		oneLineOf(keystore.BusinessName(rec.Name, rec.Principal), 48), principalText(rec), before)
	return err
}
