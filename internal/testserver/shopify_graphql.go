package testserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/idemkit/idem/internal/gqldoc"
)

// shopifyInventory holds the inventory quantities the simulated Admin
// API adjusts, by item, location and quantity name, and how many
// adjustment groups it made. It lives in the process: the key and the
// group's operation record are committed in the store, the quantities
// are not (so a crash fault can lose them).
type shopifyInventory struct {
	mu     sync.Mutex
	levels map[string]int64
	groups int
}

// Quantity bounds: "The total quantity can't be higher than
// 1,000,000,000." / "can't be lower than -1,000,000,000."
// (https://shopify.dev/docs/api/admin-graphql/2026-01/enums/InventoryAdjustQuantitiesUserErrorCode).
const shopifyQuantityBound = 1_000_000_000

// operationKindInventoryAdjustment is the kind of the operation record an
// adjustment group is committed as, with its key.
const operationKindInventoryAdjustment = "inventory_adjustment_group"

// shopifyChange is one InventoryChangeInput.
type shopifyChange struct {
	Delta              int64
	ItemID, LocationID string
	ChangeFrom         *int64
	Ledger             any
}

// shopifyGraphQL serves POST /admin/api/2026-04/graphql.json: the
// inventoryAdjustQuantities mutation, answered as GraphQL answers are,
// 200 with data or errors.
func (a *paymentsAPI) shopifyGraphQL(w http.ResponseWriter, r *http.Request) {
	principal, ok := a.requirePrincipal(w, r)
	if !ok {
		return
	}
	body, rerr := readBody(w, r, a.maxBody)
	if rerr != nil {
		writeShopifyErrors(w, rerr.status, rerr.detail)
		return
	}
	req, op, err := shopifyOperation(body)
	if err != nil {
		writeShopifyErrors(w, http.StatusBadRequest, err.Error())
		return
	}
	if op.Type != "mutation" || len(op.Selections) != 1 || op.Selections[0].Field == nil || op.Selections[0].Field.Name != shopifyAdjustField {
		// Chosen: this server serves one mutation field, alone.
		writeShopifyErrors(w, http.StatusOK, "this simulator serves one field per request: mutation { "+shopifyAdjustField+"(input: …) @idempotent(key: …) { … } }")
		return
	}
	field := op.Selections[0].Field
	input, err := shopifyInput(field, req.Variables)
	if err != nil {
		writeShopifyErrors(w, http.StatusOK, err.Error())
		return
	}
	a.shopifyAdjust(w, r, principal, field, input)
}

// shopifyInput reads the input argument: InventoryAdjustQuantitiesInput
// "reason ... name ... changes" (Shopify's changelog example,
// https://shopify.dev/changelog/making-idempotency-mandatory-for-inventory-adjustments-and-refund-mutations),
// changes of "delta, inventoryItemId, locationId", and changeFromQuantity
// ("The changeFromQuantity argument no longer matches the persisted
// quantity", the CHANGE_FROM_QUANTITY_STALE code).
func shopifyInput(f *gqldoc.Field, vars map[string]json.RawMessage) (adjustInput, error) {
	var in adjustInput
	var raw any
	for _, arg := range f.Arguments {
		if arg.Name != "input" {
			return in, fmt.Errorf("Field '%s' doesn't accept argument '%s'", f.Name, arg.Name)
		}
		v, err := gqlValue(arg.Value, vars)
		if err != nil {
			return in, err
		}
		raw = v
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return in, fmt.Errorf("Field '%s' is missing required argument: input", f.Name)
	}
	if in.reason, ok = obj["reason"].(string); !ok || in.reason == "" {
		return in, fmt.Errorf("input.reason: expected a non-empty String")
	}
	if in.name, ok = obj["name"].(string); !ok || in.name == "" {
		return in, fmt.Errorf("input.name: expected a non-empty String")
	}
	in.reference = obj["referenceDocumentUri"]
	changes, ok := obj["changes"].([]any)
	if !ok || len(changes) == 0 {
		return in, fmt.Errorf("input.changes: expected a non-empty list")
	}
	for i, c := range changes {
		m, ok := c.(map[string]any)
		if !ok {
			return in, fmt.Errorf("input.changes.%d: expected an InventoryChangeInput", i)
		}
		var ch shopifyChange
		delta, err := gqlInt(m["delta"])
		if err != nil {
			return in, fmt.Errorf("input.changes.%d.delta: %v", i, err)
		}
		ch.Delta = delta
		if ch.ItemID, ok = m["inventoryItemId"].(string); !ok {
			return in, fmt.Errorf("input.changes.%d.inventoryItemId: expected an ID", i)
		}
		if ch.LocationID, ok = m["locationId"].(string); !ok {
			return in, fmt.Errorf("input.changes.%d.locationId: expected an ID", i)
		}
		if v, present := m["changeFromQuantity"]; present && v != nil {
			n, err := gqlInt(v)
			if err != nil {
				return in, fmt.Errorf("input.changes.%d.changeFromQuantity: %v", i, err)
			}
			ch.ChangeFrom = &n
		}
		ch.Ledger = m["ledgerDocumentUri"]
		in.changes = append(in.changes, ch)
	}
	return in, nil
}

// adjustInput is one InventoryAdjustQuantitiesInput.
type adjustInput struct {
	reason, name string
	reference    any
	changes      []shopifyChange
}

// shopifyAdjust applies the changes and answers the payload, committing
// the adjustment group with the key. Validation failures are user errors
// of the payload, as Shopify's codes are.
func (a *paymentsAPI) shopifyAdjust(w http.ResponseWriter, r *http.Request, principal string, f *gqldoc.Field, in adjustInput) {
	inv := a.inventory
	inv.mu.Lock()
	defer inv.mu.Unlock()
	after := make([]int64, len(in.changes))
	pending := map[string]int64{}
	for i, ch := range in.changes {
		if !strings.HasPrefix(ch.ItemID, "gid://shopify/InventoryItem/") {
			a.shopifyUserErrors(w, f, shopifyUserError{"INVALID_INVENTORY_ITEM", []string{"input", "changes", strconv.Itoa(i), "inventoryItemId"}, "The specified inventory item could not be found."})
			return
		}
		if !strings.HasPrefix(ch.LocationID, "gid://shopify/Location/") {
			a.shopifyUserErrors(w, f, shopifyUserError{"INVALID_LOCATION", []string{"input", "changes", strconv.Itoa(i), "locationId"}, "The specified location could not be found."})
			return
		}
		level := principal + "\x00" + ch.ItemID + "\x00" + ch.LocationID + "\x00" + in.name
		now, seen := pending[level]
		if !seen {
			now = inv.levels[level]
		}
		if ch.ChangeFrom != nil && *ch.ChangeFrom != now {
			a.shopifyUserErrors(w, f, shopifyUserError{"CHANGE_FROM_QUANTITY_STALE", []string{"input", "changes", strconv.Itoa(i), "changeFromQuantity"}, "The changeFromQuantity argument no longer matches the persisted quantity."})
			return
		}
		next := now + ch.Delta
		switch {
		case next > shopifyQuantityBound:
			a.shopifyUserErrors(w, f, shopifyUserError{"INVALID_QUANTITY_TOO_HIGH", []string{"input", "changes", strconv.Itoa(i), "delta"}, "The total quantity can't be higher than 1,000,000,000."})
			return
		case next < -shopifyQuantityBound:
			a.shopifyUserErrors(w, f, shopifyUserError{"INVALID_QUANTITY_TOO_LOW", []string{"input", "changes", strconv.Itoa(i), "delta"}, "The total quantity can't be lower than -1,000,000,000."})
			return
		}
		pending[level] = next
		after[i] = next
	}
	now := a.now().UTC()
	op := Operation{ID: newID(operationIDPrefix), Principal: principal, Kind: operationKindInventoryAdjustment,
		Created: now, SettleAt: now}
	changes := make([]any, len(in.changes))
	for i, ch := range in.changes {
		changes[i] = map[string]any{
			"name": in.name, "delta": ch.Delta, "quantityAfterChange": after[i], "ledgerDocumentUri": ch.Ledger,
			"item": map[string]any{"id": ch.ItemID}, "location": map[string]any{"id": ch.LocationID},
		}
	}
	payload := map[string]any{
		"inventoryAdjustmentGroup": map[string]any{
			"id":                   "gid://shopify/InventoryAdjustmentGroup/" + op.ID,
			"createdAt":            now.Format("2006-01-02T15:04:05Z"),
			"reason":               in.reason,
			"referenceDocumentUri": in.reference,
			"changes":              changes,
		},
		"userErrors": []any{},
	}
	resp, err := jsonResponse(http.StatusOK, map[string]any{"data": map[string]any{f.ResponseKey(): selectFields(payload, f.Selections)}})
	if err != nil {
		a.writeInternalError(w, err)
		return
	}
	resp.ResourceID = op.ID
	committed := false
	a.commit(w, r, resp, func(ctx context.Context, c *Completion) error {
		err := a.store.CreateOperation(ctx, op, c)
		committed = err == nil
		return err
	})
	if committed {
		for level, q := range pending {
			inv.levels[level] = q
		}
		inv.groups++
	}
}

// shopifyUserErrors answers the payload with user errors and no group.
func (a *paymentsAPI) shopifyUserErrors(w http.ResponseWriter, f *gqldoc.Field, errs ...shopifyUserError) {
	list := make([]any, len(errs))
	for i, e := range errs {
		list[i] = map[string]any{"code": e.Code, "field": e.Field, "message": e.Message}
	}
	payload := map[string]any{"inventoryAdjustmentGroup": nil, "userErrors": list}
	a.writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{f.ResponseKey(): selectFields(payload, f.Selections)}})
}

// selectFields keeps of v the fields sels select, under their response
// keys, as GraphQL answers only what was asked. Fragments are flattened
// (their type conditions are not checked); a field v lacks is null.
func selectFields(v any, sels []*gqldoc.Selection) any {
	if sels == nil {
		return v
	}
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, item := range v {
			out[i] = selectFields(item, sels)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		selectInto(out, v, sels)
		return out
	}
	return v
}

func selectInto(out, v map[string]any, sels []*gqldoc.Selection) {
	for _, s := range sels {
		switch {
		case s.Field != nil:
			out[s.Field.ResponseKey()] = selectFields(v[s.Field.Name], s.Field.Selections)
		case s.Inline != nil:
			selectInto(out, v, s.Inline)
		}
	}
}

// gqlValue is a GraphQL input value as JSON would decode it, variables
// resolved.
func gqlValue(v gqldoc.Value, vars map[string]json.RawMessage) (any, error) {
	switch v.Kind {
	case gqldoc.VariableValue:
		raw, ok := vars[v.Text]
		if !ok {
			return nil, nil
		}
		var out any
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		if err := dec.Decode(&out); err != nil {
			return nil, fmt.Errorf("variable $%s: %v", v.Text, err)
		}
		return out, nil
	case gqldoc.IntValue, gqldoc.FloatValue:
		return json.Number(v.Text), nil
	case gqldoc.StringValue, gqldoc.EnumValue:
		return v.Text, nil
	case gqldoc.BooleanValue:
		return v.Text == "true", nil
	case gqldoc.NullValue:
		return nil, nil
	case gqldoc.ListValue:
		out := make([]any, len(v.List))
		for i, item := range v.List {
			var err error
			if out[i], err = gqlValue(item, vars); err != nil {
				return nil, err
			}
		}
		return out, nil
	case gqldoc.ObjectValue:
		out := make(map[string]any, len(v.Fields))
		for _, f := range v.Fields {
			var err error
			if out[f.Name], err = gqlValue(f.Value, vars); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown value kind %d", v.Kind)
}

// gqlInt reads a GraphQL Int (32-bit, as the specification defines it).
func gqlInt(v any) (int64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("expected an Int")
	}
	i, err := strconv.ParseInt(string(n), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("expected an Int, got %s", n)
	}
	return i, nil
}
