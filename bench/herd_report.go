package bench

import (
	"fmt"
	"io"
	"time"
)

// HerdRow is one strategy's medians over several seeds.
type HerdRow struct {
	Strategy           string
	Attempts           float64
	Makespan, P50, P99 time.Duration
}

// RunHerdSeeds plays the storm once per seed (Seed, Seed+1, ...) for
// every strategy and returns each strategy's medians, in strategy order.
func RunHerdSeeds(cfg HerdConfig, seeds int, strategies []Strategy) ([]HerdRow, error) {
	if seeds < 1 {
		return nil, fmt.Errorf("bench: herd: seeds %d: need at least 1", seeds)
	}
	rows := make([]HerdRow, 0, len(strategies))
	for _, s := range strategies {
		var attempts, makespan, p50, p99 []float64
		for i := range seeds {
			c := cfg
			c.Seed = cfg.Seed + uint64(i)
			res, err := RunHerd(c, s)
			if err != nil {
				return nil, err
			}
			attempts = append(attempts, float64(res.Attempts))
			makespan = append(makespan, float64(res.Makespan))
			p50 = append(p50, float64(res.P50))
			p99 = append(p99, float64(res.P99))
		}
		rows = append(rows, HerdRow{
			Strategy: s.Name,
			Attempts: Median(attempts),
			Makespan: time.Duration(Median(makespan)),
			P50:      time.Duration(Median(p50)),
			P99:      time.Duration(Median(p99)),
		})
	}
	return rows, nil
}

// WriteHerdTable writes rows as a Markdown table with two ratios: attempts
// against the row named baseline (no-jitter exponential) and makespan
// against the fastest row.
func WriteHerdTable(w io.Writer, rows []HerdRow, baseline string) error {
	var baseAttempts float64
	fastest := time.Duration(-1)
	for _, r := range rows {
		if r.Strategy == baseline {
			baseAttempts = r.Attempts
		}
		if fastest < 0 || r.Makespan < fastest {
			fastest = r.Makespan
		}
	}
	if baseAttempts == 0 {
		return fmt.Errorf("bench: herd table: no row named %q", baseline)
	}
	if _, err := fmt.Fprintf(w, "| strategy | attempts | attempts / no-jitter | makespan | makespan / fastest | p50 | p99 |\n|---|---:|---:|---:|---:|---:|---:|\n"); err != nil {
		return err
	}
	for _, r := range rows {
		_, err := fmt.Fprintf(w, "| %s | %.0f | %.2f | %s | %.2f | %s | %s |\n",
			r.Strategy, r.Attempts, r.Attempts/baseAttempts,
			seconds(r.Makespan), float64(r.Makespan)/float64(fastest), seconds(r.P50), seconds(r.P99))
		if err != nil {
			return err
		}
	}
	return nil
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
