package checkpeers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idemkit/idem/idemtest"
)

// checkReport is the part of `idem check --json` the tests read.
type checkReport struct {
	Profile string                 `json:"profile"`
	Passed  int                    `json:"passed"`
	Failed  int                    `json:"failed"`
	Skipped int                    `json:"skipped"`
	Error   string                 `json:"error"`
	Checks  []idemtest.CheckResult `json:"checks"`
}

// checkRun is one `idem check` run: its report and exit status.
type checkRun struct {
	report checkReport
	exit   int
}

// checkLimit bounds one `idem check` run.
const checkLimit = 90 * time.Second

// idemCheck runs `idem check URL --json args...` and returns its report
// and exit status; a run that prints no report fails the test.
func idemCheck(t *testing.T, url string, args ...string) checkRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), checkLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, idemBinary, append([]string{"check", url, "--json", "--timeout", "60s"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	exit := 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		exit = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("idem check %s: %v\n%s", url, err, stderr.String())
	}
	var report checkReport
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("idem check %s --json printed no report (%v), exit %d:\n%s\n%s", url, err, exit, stdout.String(), stderr.String())
	}
	if report.Error != "" {
		t.Fatalf("idem check %s could not run: %s", url, report.Error)
	}
	return checkRun{report: report, exit: exit}
}

// verdict is a check's outcome without its detail, whose ids and counts
// differ between runs.
func verdict(r idemtest.CheckResult) string {
	word := "PASS"
	switch {
	case r.Skipped:
		word = "SKIP"
	case r.Advised():
		word = "WARN" // advice not followed: reported, the run not failed
	case !r.Passed:
		word = "FAIL"
	}
	return fmt.Sprintf("%s %s %s", r.ID, r.Level, word)
}

// verdicts lists the run's verdicts in report order.
func (c checkRun) verdicts() []string {
	var out []string
	for _, r := range c.report.Checks {
		out = append(out, verdict(r))
	}
	return out
}

// twice runs `idem check` twice in a row against url and fails the test
// unless both runs give the same verdicts and exit status; it returns the
// second run.
func twice(t *testing.T, url string, args ...string) checkRun {
	t.Helper()
	first := idemCheck(t, url, args...)
	second := idemCheck(t, url, args...)
	if !slices.Equal(first.verdicts(), second.verdicts()) || first.exit != second.exit {
		t.Fatalf("two runs of idem check against one server disagree:\nfirst (exit %d):\n  %s\nsecond (exit %d):\n  %s",
			first.exit, strings.Join(first.verdicts(), "\n  "), second.exit, strings.Join(second.verdicts(), "\n  "))
	}
	for _, r := range second.report.Checks {
		t.Logf("%s: %s", verdict(r), r.Detail)
	}
	return second
}
