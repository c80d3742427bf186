package idem

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/uuid"

	"github.com/idemkit/idem/keystore"
)

// BeginOption configures one Begin.
type BeginOption func(*beginConfig) error

// beginConfig is what one Begin can be told.
type beginConfig struct {
	key string
	// adopt is WithAdopt's key, "" for none.
	adopt string
}

// WithIntentKey gives the intent a key of the caller's choosing instead of
// a random one: one derived from a stable business identifier (an order
// id, an upstream event id; see DeriveKey), so another system, or this one
// after losing its keystore, can send the same intent with the same key.
// It is checked like any key (the dialect's length and alphabet). A Begin
// with a name already bound to another key fails with ErrIntentConflict;
// a Begin with a key already stored gives that intent back when its
// payload and principal match, and ErrIntentConflict otherwise.
func WithIntentKey(key string) BeginOption {
	return func(b *beginConfig) error {
		if key == "" {
			return fmt.Errorf("%w: WithIntentKey: empty key", ErrInvalidRequest)
		}
		b.key = key
		return nil
	}
}

// keyNamespace is the UUID namespace DeriveKey's keys live in.
var keyNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://idemkit.github.io/idem/keys"))

// DeriveKey returns the same key for the same namespace and business
// identifier, every time and on every machine: a version 5 UUID of both.
// Use it with WithIntentKey where a key must be recoverable from the
// business identifier alone. The namespace keeps two kinds of intent (a
// payment, a refund of the same order) apart.
//
// The key depends on namespace and id only, not on who sends it. On a
// server that scopes keys by caller (draft-07 asks it to) that is
// harmless. On a server that does not, two tenants deriving a key from
// the same inputs (both have an "order-42") send the same key: tenant B's
// request is taken for tenant A's retry, and B gets A's stored payment
// back instead of a payment of its own, while A's answer is disclosed to
// B. Put the tenant into the derivation, e.g.
// DeriveKey("payment", tenantID+"/"+orderID), whenever one client or one
// server serves several tenants. Keys derived from guessable identifiers
// are guessable too, which is harmless only on a server that scopes keys
// by caller.
func DeriveKey(namespace, id string) string {
	// Length-prefixed, so no namespace and id pair reads as another.
	return uuid.NewSHA1(keyNamespace, []byte(strconv.Itoa(len(namespace))+":"+namespace+id)).String()
}

func beginOptions(opts []BeginOption) (beginConfig, error) {
	if len(opts) == 0 {
		return beginConfig{}, nil // b below escapes to the options
	}
	var b beginConfig
	for _, opt := range opts {
		if opt == nil {
			continue
		}
		if err := opt(&b); err != nil {
			return b, err
		}
	}
	return b, nil
}

// existingByKey is Begin's answer when a caller-chosen key is stored
// already: the same intent (payload and principal), or a conflict.
// get reads the stored record (the keystore's Get, or a transaction's).
func (c *Client) existingByKey(ctx context.Context, rec *keystore.Record, createErr error, get func(context.Context, string) (*keystore.Record, error)) (*keystore.Record, error) {
	found, err := get(ctx, rec.Key)
	if err != nil {
		return nil, fmt.Errorf("idem: persisting intent: %w", errors.Join(createErr, err))
	}
	if found.Fingerprint != rec.Fingerprint || found.Principal != rec.Principal || found.Host != rec.Host {
		return nil, fmt.Errorf("%w: the key is another intent's (another payload, principal or host)", ErrIntentConflict)
	}
	if rec.Name != "" && found.Name != rec.Name {
		return nil, fmt.Errorf("%w: the key is bound to another name", ErrIntentConflict)
	}
	return found, nil
}
