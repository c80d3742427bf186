package saga

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/idemkit/idem/keystore"
)

// State is a run's state in its decision record.
type State string

// The states of a run. Running goes to Completed (Complete) or
// Compensating (Fail); Compensating to Compensated, or NeedsOperator when
// a compensation cannot be proven, which goes back to Compensating once
// a person has resolved it (ResolveStep).
const (
	Running       State = "running"
	Compensating  State = "compensating"
	Compensated   State = "compensated"
	Completed     State = "completed"
	NeedsOperator State = "needs_operator"
)

// Final reports whether nothing is left to do for the run.
func (s State) Final() bool { return s == Completed || s == Compensated }

// Step kinds in the record.
const (
	kindHTTP  = "http"
	kindLocal = "local"
)

// runData is the decision record a run keeps in keystore.Run.Data.
type runData struct {
	// Steps are the steps that began, in the order they began.
	Steps []stepEntry `json:"steps,omitempty"`
	// Cause is what Fail was given, as text.
	Cause string `json:"cause,omitempty"`
	// Problem says why the run needs an operator, "" otherwise.
	Problem string `json:"problem,omitempty"`
}

// stepEntry is one step of the record.
type stepEntry struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Key and CompensationKey are the derived keys of an HTTP step.
	Key             string `json:"key,omitempty"`
	CompensationKey string `json:"compensation_key,omitempty"`
	// Undo is set when the step was given a compensation.
	Undo bool `json:"undo,omitempty"`
	// Result is a local step's result.
	Result []byte `json:"result,omitempty"`
	// Compensated is set once nothing is left to undo for the step, and
	// Resolution says how (compensated, nothing to undo, a person).
	Compensated bool   `json:"compensated,omitempty"`
	Resolution  string `json:"resolution,omitempty"`
}

// clone copies d so that a failed write leaves d as it was.
func (d runData) clone() runData {
	d.Steps = slices.Clone(d.Steps)
	return d
}

// step is the entry named name, nil if none.
func (d *runData) step(name string) *stepEntry {
	for i := range d.Steps {
		if d.Steps[i].Name == name {
			return &d.Steps[i]
		}
	}
	return nil
}

// decodeRun reads a stored run's record.
func decodeRun(r *keystore.Run) (runData, error) {
	var d runData
	if err := json.Unmarshal(r.Data, &d); err != nil {
		return d, fmt.Errorf("%w: run %q: %v", keystore.ErrCorrupt, r.ID, err)
	}
	switch State(r.State) {
	case Running, Compensating, Compensated, Completed, NeedsOperator:
	default:
		return d, fmt.Errorf("%w: run %q has unknown state %q", keystore.ErrCorrupt, r.ID, r.State)
	}
	return d, nil
}

// maxIDLen bounds run ids and step names.
const maxIDLen = 128

// checkID refuses an id (or step name) outside [A-Za-z0-9._:-]{1,128}: no
// "/" (the intents' names join run and step with it), no space, nothing
// a log or a shell could misread.
func checkID(what, id string) error {
	if id == "" || len(id) > maxIDLen {
		return fmt.Errorf("%w: %s must be 1 to %d characters, got %d", ErrInvalid, what, maxIDLen, len(id))
	}
	for i := range len(id) {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return fmt.Errorf("%w: %s %q: byte %q is not allowed (letters, digits, '.', '_', ':', '-')", ErrInvalid, what, id, c)
		}
	}
	return nil
}

// scopeMark joins a scope and a run id into the id a run is stored
// under; neither holds it (checkID), so the pair reads back one way.
const scopeMark = "@"

// storedRunID is the id the run with id is stored under in scope: id
// itself without a scope, scope@id with one, so two scopes' runs of one
// id are two runs.
func storedRunID(scope, id string) string {
	if scope == "" {
		return id
	}
	return scope + scopeMark + id
}

// callerRunID is storedRunID's inverse for scope, and whether stored
// belongs to scope at all.
func callerRunID(scope, stored string) (string, bool) {
	if scope == "" {
		return stored, !strings.Contains(stored, scopeMark)
	}
	return strings.CutPrefix(stored, scope+scopeMark)
}

// splitRunID is the scope and id of the run stored under stored: the
// scope is "" for a run stored without one.
func splitRunID(stored string) (scope, id string) {
	if scope, id, ok := strings.Cut(stored, scopeMark); ok {
		return scope, id
	}
	return "", stored
}

// intentName is the name of a step's intent, or of its compensation's,
// in the run stored under storedID: saga/<run>/<step>[/compensation].
// Neither the stored id nor the step holds a "/", so no two steps share
// a name.
func intentName(storedID, step string, compensation bool) string {
	name := "saga/" + storedID + "/" + step
	if compensation {
		name += "/compensation"
	}
	return name
}
