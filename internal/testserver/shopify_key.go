package testserver

import (
	"encoding/json"
	"fmt"

	"github.com/idemkit/idem/internal/gqldoc"
	"github.com/idemkit/idem/server"
)

// shopifyRequest is a GraphQL request body: "query", and optionally
// "variables" and "operationName".
type shopifyRequest struct {
	Query         *string                    `json:"query"`
	Variables     map[string]json.RawMessage `json:"variables"`
	OperationName string                     `json:"operationName"`
}

// shopifyOperation parses a GraphQL request body and returns the
// operation it asks for: the one named by operationName, or the only one.
func shopifyOperation(body []byte) (shopifyRequest, *gqldoc.Operation, error) {
	var req shopifyRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return req, nil, &server.KeyError{Problem: server.BodyNotObject, Detail: "the body is not a GraphQL request (a JSON object): " + err.Error()}
	}
	if req.Query == nil {
		return req, nil, &server.KeyError{Problem: server.BodyNotObject, Detail: "the body has no query"}
	}
	doc, err := gqldoc.Parse(*req.Query)
	if err != nil {
		return req, nil, &server.KeyError{Problem: server.KeyMalformed, Detail: err.Error()}
	}
	var op *gqldoc.Operation
	for _, o := range doc.Operations {
		if req.OperationName == "" && len(doc.Operations) == 1 || o.Name == req.OperationName {
			op = o
		}
	}
	if op == nil {
		return req, nil, &server.KeyError{Problem: server.KeyMalformed, Detail: fmt.Sprintf("no operation named %q in the document", req.OperationName)}
	}
	return req, op, nil
}

// shopifySplitKey reads the key of the @idempotent(key:) directive on the
// mutation's field, "@idempotent(key: \"4f5b6ebf-…\")" after the field's
// arguments in Shopify's example
// (https://shopify.dev/changelog/making-idempotency-mandatory-for-inventory-adjustments-and-refund-mutations);
// the key is a string literal or a $variable, as GraphQL arguments are.
// The body left for the handler and the fingerprint is the request with
// the directive taken out of the document: what Shopify compares is the
// operation's parameters ("The same idempotency key cannot be used with
// different operation parameters",
// https://shopify.dev/docs/api/admin-graphql/2026-01/enums/InventoryAdjustQuantitiesUserErrorCode).
// No directive is ErrMissingKey.
func shopifySplitKey(body []byte) (string, []byte, error) {
	req, op, err := shopifyOperation(body)
	if err != nil {
		return "", nil, err
	}
	query := *req.Query
	var key string
	var cut *gqldoc.Directive
	for _, sel := range op.Selections {
		if sel.Field == nil {
			continue
		}
		for i, d := range sel.Field.Directives {
			if d.Name != "idempotent" {
				continue
			}
			if cut != nil {
				return "", nil, &server.KeyError{Problem: server.KeyMalformed, Detail: "more than one @idempotent directive"}
			}
			cut = &sel.Field.Directives[i]
			if key, err = shopifyDirectiveKey(d, req.Variables); err != nil {
				return "", nil, err
			}
		}
	}
	if cut == nil {
		return "", nil, ErrMissingKey
	}
	if key == "" {
		return "", nil, &server.KeyError{Problem: server.KeyEmpty, Detail: "the @idempotent key is empty"}
	}
	// Chosen: no Shopify page states a limit; this server's own applies.
	if len(key) > server.MaxKeyLength {
		return "", nil, &server.KeyError{Problem: server.KeyTooLong, Detail: fmt.Sprintf("the @idempotent key is %d bytes long, at most %d are allowed", len(key), server.MaxKeyLength)}
	}
	rest := struct {
		Query         string                     `json:"query"`
		Variables     map[string]json.RawMessage `json:"variables,omitempty"`
		OperationName string                     `json:"operationName,omitempty"`
	}{query[:cut.Start] + query[cut.End:], req.Variables, req.OperationName}
	out, err := json.Marshal(rest)
	if err != nil {
		return "", nil, &server.KeyError{Problem: server.KeyMalformed, Detail: err.Error()}
	}
	return key, out, nil
}

// shopifyDirectiveKey is the value of d's key argument.
func shopifyDirectiveKey(d gqldoc.Directive, vars map[string]json.RawMessage) (string, error) {
	if len(d.Arguments) != 1 || d.Arguments[0].Name != "key" {
		return "", &server.KeyError{Problem: server.KeyMalformed, Detail: "@idempotent takes one argument, key"}
	}
	v := d.Arguments[0].Value
	switch v.Kind {
	case gqldoc.StringValue:
		return v.Text, nil
	case gqldoc.VariableValue:
		var key string
		if raw, ok := vars[v.Text]; !ok || json.Unmarshal(raw, &key) != nil {
			return "", &server.KeyError{Problem: server.KeyNotString, Detail: fmt.Sprintf("the variable $%s of @idempotent(key:) is not a string", v.Text)}
		}
		return key, nil
	}
	return "", &server.KeyError{Problem: server.KeyNotString, Detail: "@idempotent(key:) is not a string"}
}
