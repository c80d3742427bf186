package bench

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// spread is a median with its range over rounds; none says there was
// nothing to take it over.
type spread struct {
	med, lo, hi float64
	none        bool
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{none: true}
	}
	return spread{med: Median(xs), lo: slices.Min(xs), hi: slices.Max(xs)}
}

func (s spread) format(verb string) string {
	if s.none {
		return "—"
	}
	return fmt.Sprintf(verb+" ("+verb+"–"+verb+")", s.med, s.lo, s.hi)
}

// WriteStormTable writes the storm's rounds (rounds[r][i] is contender i
// in round r) as a Markdown table of medians with their ranges. Attempts
// and makespan are also shown as ratios to the contender named baseline,
// and makespan to the fastest jittered comparison strategy (Jittered)
// that failed no caller, all taken within each round.
func WriteStormTable(w io.Writer, rounds [][]StormResult, contenders []StormContender, baseline string) error {
	if len(rounds) == 0 {
		return fmt.Errorf("bench: storm table: no rounds")
	}
	base := slices.IndexFunc(contenders, func(c StormContender) bool { return c.Name == baseline })
	if base < 0 {
		return fmt.Errorf("bench: storm table: no contender named %q", baseline)
	}
	if _, err := io.WriteString(w, "| strategy | failed callers | attempts / caller | attempts vs "+baseline+
		" | makespan | makespan vs "+baseline+" | makespan / fastest comparison | p50 | p99 |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"); err != nil {
		return err
	}
	for i, c := range contenders {
		var failed, apc, apcRatio, mk, mkBase, mkRatio, p50, p99 []float64
		for _, round := range rounds {
			// A contender that failed callers may end early by giving up:
			// the reference is the fastest jittered one that failed none.
			fastest := time.Duration(-1)
			for j, r := range round {
				if contenders[j].Jittered && r.Failed == 0 && (fastest < 0 || r.Makespan < fastest) {
					fastest = r.Makespan
				}
			}
			r := round[i]
			failed = append(failed, float64(r.Failed))
			apc = append(apc, r.AttemptsPerCaller())
			apcRatio = append(apcRatio, r.AttemptsPerCaller()/round[base].AttemptsPerCaller())
			mk = append(mk, r.Makespan.Seconds())
			mkBase = append(mkBase, float64(r.Makespan)/float64(max(round[base].Makespan, 1)))
			if fastest > 0 { // a round where every jittered contender failed callers has no reference
				mkRatio = append(mkRatio, float64(r.Makespan)/float64(fastest))
			}
			p50 = append(p50, r.P50.Seconds())
			p99 = append(p99, r.P99.Seconds())
		}
		_, err := fmt.Fprintf(w, "| %s | %s | %s | %s | %s s | %s | %s | %s s | %s s |\n", c.Name,
			spreadOf(failed).format("%.0f"), spreadOf(apc).format("%.2f"), spreadOf(apcRatio).format("%.2f"),
			spreadOf(mk).format("%.2f"), spreadOf(mkBase).format("%.2f"), spreadOf(mkRatio).format("%.2f"), spreadOf(p50).format("%.2f"), spreadOf(p99).format("%.2f"))
		if err != nil {
			return err
		}
	}
	return nil
}

// WriteStormOutageTable writes the outage rounds (rounds[r][i] is
// contender i in round r) as a Markdown table of medians with ranges.
func WriteStormOutageTable(w io.Writer, rounds [][]StormOutageResult, contenders []StormContender) error {
	if len(rounds) == 0 {
		return fmt.Errorf("bench: storm outage table: no rounds")
	}
	if _, err := io.WriteString(w, "| strategy | callers | attempts | amplification (whole run) | amplification (adapted: last part) |\n|---|---:|---:|---:|---:|\n"); err != nil {
		return err
	}
	for i, c := range contenders {
		var callers, attempts, whole, adapted []float64
		for _, round := range rounds {
			r := round[i]
			callers = append(callers, float64(r.Callers))
			attempts = append(attempts, float64(r.Attempts))
			whole = append(whole, r.Amplification())
			adapted = append(adapted, r.AdaptedAmplification())
		}
		_, err := fmt.Fprintf(w, "| %s | %.0f | %s | %s | %s |\n", c.Name, Median(callers),
			spreadOf(attempts).format("%.0f"), spreadOf(whole).format("%.3f"), spreadOf(adapted).format("%.3f"))
		if err != nil {
			return err
		}
	}
	return nil
}
