package truthtest

import (
	"os"
	"strings"
)

// Mask names dimensions a run leaves out of its scenarios, so that a long
// fuzz can look past defects already known without weakening any
// property. The zero Mask leaves nothing out.
type Mask map[string]bool

// Dimensions a Mask can leave out.
var maskable = []string{
	"unknownwords", // operation status words no dialect documents
	"poll4xx",      // polls answered 4xx other than 404 and 410
	"gone",         // polls answered 404 or 410
	"purge",        // purges
	"secretquery",  // secret query parameters
	"adyen",        // the Adyen dialect (its API key header)
	"retention",    // a short key retention
	"refresh",      // credential refreshes
}

// MaskFromEnv reads IDEM_TRUTH_SKIP, a comma-separated list of dimension
// names (unknownwords, poll4xx, gone, purge, secretquery, adyen,
// retention, refresh).
func MaskFromEnv() Mask {
	m := Mask{}
	for _, name := range strings.Split(os.Getenv("IDEM_TRUTH_SKIP"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			m[name] = true
		}
	}
	return m
}

// Apply returns sc without the masked dimensions.
func (m Mask) Apply(sc Scenario) Scenario {
	if len(m) == 0 {
		return sc
	}
	if m["adyen"] && sc.Dialect == "adyen" {
		sc.Dialect = "draft"
	}
	if m["secretquery"] {
		sc.SecretQuery = false
	}
	if m["retention"] {
		sc.Retention = 0
	}
	polls := append([]Poll(nil), sc.Polls...)
	for i, p := range polls {
		switch {
		case m["unknownwords"] && p.Kind == PollDoc && wordTruth(sc.Dialect, p.Word) == 0:
			polls[i].Word = pendingWord(sc.Dialect)
		case m["poll4xx"] && p.Kind == PollStatus && p.Status >= 400 && p.Status < 500 && p.Status != 404 && p.Status != 410:
			polls[i].Kind = PollStill
		case m["gone"] && p.Kind == PollStatus && (p.Status == 404 || p.Status == 410):
			polls[i].Kind = PollStill
		}
	}
	sc.Polls = polls
	var steps []Step
	for _, st := range sc.Steps {
		if (m["purge"] && st.Kind == StepPurge) || (m["refresh"] && st.Kind == StepRefresh) {
			continue
		}
		steps = append(steps, st)
	}
	sc.Steps = steps
	return sc
}
