package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/idemkit/idem/idemtest"
)

// checkList is the --list --json output.
type checkList struct {
	Profile string               `json:"profile"`
	Dialect string               `json:"dialect"`
	Checks  []idemtest.CheckSpec `json:"checks"`
}

// runCheckList prints the checks the profile and dialect grade, each with
// its level, source and the sentence it grades, without sending anything.
func runCheckList(out io.Writer, f checkFlags) error {
	specs, err := idemtest.ListConformanceChecks(f.profile, f.dialect)
	if err != nil {
		return f.cannotRun(out, "", fmt.Errorf("check: %s", strings.TrimPrefix(err.Error(), "idemtest: ")))
	}
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(checkList{Profile: f.profile, Dialect: f.dialect, Checks: specs})
	} else {
		err = writeCheckList(out, specs)
	}
	if err != nil {
		return &exitError{code: exitCannotRun, err: fmt.Errorf("check: writing the list: %w", err)}
	}
	return nil
}

// writeCheckList prints one paragraph a check: its ID, level and name,
// its source, the quoted sentence, and the note on its level if any.
func writeCheckList(out io.Writer, specs []idemtest.CheckSpec) error {
	for i, s := range specs {
		if i > 0 {
			if _, err := fmt.Fprintln(out); err != nil {
				return err
			}
		}
		if _, err := fmt.Fprintf(out, "%s  %s  %s\n  source: %s\n  \"%s\"\n", s.ID, s.Level, s.Name, s.Ref, s.Quote); err != nil {
			return err
		}
		if s.Note != "" {
			if _, err := fmt.Fprintf(out, "  %s\n", s.Note); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkListHelp is the compact list of checks in `idem check --help`: each
// check of the draft dialect with its level under the draft and the idem
// profiles, and its source.
func checkListHelp() string {
	draft, err := idemtest.ListConformanceChecks(idemtest.ProfileDraft, "")
	if err != nil {
		return ""
	}
	idem, err := idemtest.ListConformanceChecks(idemtest.ProfileIdem, "")
	if err != nil {
		return ""
	}
	draftLevel := map[string]string{}
	for _, s := range draft {
		draftLevel[s.ID] = s.Level
	}
	var b strings.Builder
	b.WriteString("Checks (level by default, level with --profile idem, source; --list prints each\nquoted sentence, --list --dialect NAME a provider's):\n")
	for _, s := range idem {
		level, ok := draftLevel[s.ID]
		if !ok {
			level = "-"
		}
		fmt.Fprintf(&b, "  %-22s %-7s %-7s %s\n", s.ID, level, s.Level, s.Ref)
	}
	return b.String()
}
