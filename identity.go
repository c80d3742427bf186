package idem

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/idemkit/idem/keystore"
)

// ErrIdentityAmbiguous: Begin found no intent of the name under its own
// principal, but found the name under another principal, or stored with
// none (by a build that did not scope names by principal, or begun
// without credentials). Whether that intent is the same account's cannot
// be told from the keystore, so Begin made no new intent and no new key:
// a second key for the same payment is a second payment on a server that
// scopes keys by account. The error is an *IdentityError carrying the
// existing intents; adopt the right one (WithAdopt, Client.Adopt, `idem
// intents adopt`), or say which account a request acts for with
// WithPrincipal, an account id that stays the same when credentials are
// refreshed.
var ErrIdentityAmbiguous = errors.New("idem: the name is stored under another principal or none; no new intent begun")

// IdentityError is Begin's error when a name is stored under another
// principal, or under none (see ErrIdentityAmbiguous). It matches
// ErrIdentityAmbiguous.
type IdentityError struct {
	// Name is the business name given to Begin.
	Name string
	// Principal is the fingerprint of the principal Begin was given
	// ("" for anonymous).
	Principal string
	// Existing are the intents stored under the name for other
	// principals, or for none, oldest first; adopt one by its Key.
	Existing []*Intent
}

// Error names the intents found, their keys by hash only (an error may
// be logged), and says what to do.
func (e *IdentityError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "idem: %q is stored under another principal than this request's (%s):", e.Name, shortPrincipal(e.Principal))
	for i, in := range e.Existing {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " key#%s %s", keyHash(in.Key), in.State)
		if in.Principal == "" {
			b.WriteString(" under no principal (written by an earlier build, or begun without credentials)")
		} else {
			fmt.Fprintf(&b, " under principal %s", shortPrincipal(in.Principal))
		}
	}
	b.WriteString("; no new intent was begun, since a new key for the same payment pays twice on a server that scopes keys by account." +
		" If it is this account's intent, adopt it (Begin with idem.WithAdopt(key), Client.Adopt, or idem intents adopt KEY; IdentityError.Existing holds the keys);" +
		" set idem.WithPrincipal to an account id that stays the same when credentials are refreshed: a refresh then needs no adoption, and other accounts' intents of one name are kept apart")
	return b.String()
}

// Is reports ErrIdentityAmbiguous.
func (e *IdentityError) Is(target error) bool { return target == ErrIdentityAmbiguous }

// WithAdopt makes Begin take over the intent with key when the name is
// stored for another principal or for none (see ErrIdentityAmbiguous):
// the caller vouches that both name the same account. The intent is bound
// to this request's principal and credentials from then on (Client.Adopt)
// and Begin returns it, with its key, as if it had been begun here; its
// payload and Host must match (ErrIntentConflict). A name already this
// principal's with that key is returned as it is; with another key, or no
// such intent at all, Begin fails and begins nothing.
func WithAdopt(key string) BeginOption {
	return func(b *beginConfig) error {
		if key == "" {
			return fmt.Errorf("%w: WithAdopt: empty key", ErrInvalidRequest)
		}
		b.adopt = key
		return nil
	}
}

// maxNamesakes bounds the intents one name is looked up under.
const maxNamesakes = 16

// checkNamesakes runs before Begin creates the named intent rec: when the
// name is stored for another principal, or none, in a way the caller's
// principal cannot tell apart (see ambiguous), it fails with an
// *IdentityError, unless the caller adopts one of those intents
// (adopt, WithAdopt), which it then rebinds to rec's principal. sent is
// the header as sent and params the secret query parameters, to compare
// the credentials with a principal of theirs.
func (c *Client) checkNamesakes(ctx context.Context, name string, rec *keystore.Record, sent http.Header, req *http.Request, adopt string) error {
	var found []*keystore.Record
	err := c.readStore(ctx, "looking the name up under other principals", func(rctx context.Context) (err error) {
		found, err = c.namesakes(rctx, name, rec.Principal)
		return err
	})
	if err != nil {
		return fmt.Errorf("idem: looking up %q under other principals: %w", name, err)
	}
	var others []*keystore.Record
	credentials, credentialsKnown := "", false
	for _, r := range found {
		if r.Principal == rec.Principal {
			if adopt != "" && r.Key != adopt {
				return fmt.Errorf("%w: %q is this principal's intent already, under another key than WithAdopt's", ErrIntentConflict, name)
			}
			return nil // the name is this principal's: Create returns it
		}
		if r.Principal != "" && c.cfg.principal != nil {
			// WithPrincipal names accounts: another account's intent is
			// another payment, unless it was begun under the default
			// principal of these very credentials.
			if !credentialsKnown {
				params := c.secretParamsOf(req)
				credentials = c.credentialsPrincipal(sent, params, c.secretNames(sent, params))
				credentialsKnown = true
			}
			if r.Principal != credentials {
				continue
			}
		}
		others = append(others, r)
	}
	if adopt != "" {
		for _, r := range others {
			if r.Key == adopt {
				return c.adoptNamesake(ctx, r, rec)
			}
		}
		return fmt.Errorf("idem: WithAdopt: no intent %q under another principal has that key (key#%s): %w", name, keyHash(adopt), keystore.ErrNotFound)
	}
	if len(others) == 0 {
		return nil
	}
	e := &IdentityError{Name: name, Principal: rec.Principal}
	for _, r := range others {
		e.Existing = append(e.Existing, intentFromRecord(r))
	}
	return e
}

// namesakes are the records stored under the business name for any
// principal. A keystore that cannot list them (no keystore.NameScanner)
// is asked for the unscoped name alone, the one earlier builds stored.
func (c *Client) namesakes(ctx context.Context, name, principal string) ([]*keystore.Record, error) {
	if ns, ok := c.store.(keystore.NameScanner); ok {
		return ns.Namesakes(ctx, name, maxNamesakes)
	}
	if principal == "" {
		return nil, nil
	}
	r, err := c.store.GetByName(ctx, name)
	if errors.Is(err, keystore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []*keystore.Record{r}, nil
}

// adoptNamesake binds r, the intent WithAdopt names, to the principal and
// credentials of rec, the intent Begin would create, when both are the
// same payload.
func (c *Client) adoptNamesake(ctx context.Context, r, rec *keystore.Record) error {
	if r.Fingerprint != rec.Fingerprint || r.Host != rec.Host {
		return fmt.Errorf("%w: WithAdopt: the intent under key#%s has another payload", ErrIntentConflict, keyHash(r.Key))
	}
	_, err := c.rebind(ctx, r.Key, r.Name, keystore.Binding{Name: rec.Name, Principal: rec.Principal, SecretHeaders: rec.SecretHeaders})
	return err
}

// rebind moves the intent with key from the stored name from to b, under
// the key's lock, so no Do of this client writes it meanwhile.
func (c *Client) rebind(ctx context.Context, key, from string, b keystore.Binding) (*keystore.Record, error) {
	rb, ok := c.store.(keystore.Rebinder)
	if !ok {
		return nil, fmt.Errorf("idem: adopting an intent: the keystore (%T) cannot rebind records (keystore.Rebinder)", c.store)
	}
	kl, err := c.locks.lock(ctx, key)
	if err != nil {
		return nil, err
	}
	defer c.locks.unlock(key, kl)
	r, err := rb.Rebind(ctx, key, from, b)
	if err != nil {
		return nil, fmt.Errorf("idem: adopting intent key#%s: %w", keyHash(key), err)
	}
	return r, nil
}

// Adopt binds the named intent with key to the principal and credentials
// of req (its secret headers and query parameters, and WithPrincipal's
// answer for it): a Begin of its name with them returns it, and its
// attempts carry them. It is the explicit answer to ErrIdentityAmbiguous
// for an intent begun under other credentials of the same account, or
// stored by a build that did not scope names by principal. The caller
// vouches that both name one account: the server sees the intent's key
// under the new credentials. req needs no body; only its header and URL
// are read. An unnamed intent has no name to scope: it is returned as
// it is.
func (c *Client) Adopt(ctx context.Context, key string, req *http.Request) (*Intent, error) {
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	if req == nil || req.URL == nil {
		return nil, fmt.Errorf("%w: Adopt: a request with the credentials to bind the intent to is needed", ErrInvalidRequest)
	}
	rec, err := c.store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("idem: loading intent (key hash %s): %w", keyHash(key), err)
	}
	_, sent, _ := c.splitSecrets(req.Header)
	withURLCredentials(req.URL, sent)
	principal, names, err := c.beginPrincipal(req, sent)
	if err != nil {
		return nil, err
	}
	if rec.Name == "" {
		return intentFromRecord(rec), nil
	}
	business := keystore.BusinessName(rec.Name, rec.Principal)
	to := keystore.Binding{Name: keystore.ScopedName(business, principal), Principal: principal, SecretHeaders: names}
	if to.Name == rec.Name && to.Principal == rec.Principal && slices.Equal(to.SecretHeaders, rec.SecretHeaders) {
		return intentFromRecord(rec), nil
	}
	out, err := c.rebind(ctx, key, rec.Name, to)
	if err != nil {
		return nil, err
	}
	return intentFromRecord(out), nil
}
