package main

import (
	"fmt"
	"io"
	"time"

	"github.com/idemkit/idem/bench"
)

// spread is a median with the range it came from.
type spread struct{ median, lo, hi float64 }

func spreadOf(xs []float64) spread {
	s := spread{median: bench.Median(xs), lo: xs[0], hi: xs[0]}
	for _, x := range xs[1:] {
		s.lo, s.hi = min(s.lo, x), max(s.hi, x)
	}
	return s
}

func (s spread) format(verb string) string {
	return fmt.Sprintf(verb+" ("+verb+"–"+verb+")", s.median, s.lo, s.hi)
}

func rates(rs []round) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = r.perSecond
	}
	return out
}

func cpus(rs []round) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = float64(r.cpuPerRequest) / float64(time.Microsecond)
	}
	return out
}

// perRound applies f to two contenders' results round by round.
func perRound(a, b []round, f func(a, b round) float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = f(a[i], b[i])
	}
	return out
}

// find returns the index of the contender of kind on store, of the
// -before build or not, or -1.
func find(cs []*contender, kind, store string, before bool) int {
	for i, c := range cs {
		if c.kind == kind && c.store == store && c.before == before {
			return i
		}
	}
	return -1
}

func report(out io.Writer, cfg config, cs []*contender, results [][]round, load0, load1 string) {
	fmt.Fprintf(out, "serverbench: %d connections, %d interleaved rounds of %v per contender, one server process each; load average %s at the start, %s at the end\n\n",
		cfg.load.Conns, cfg.rounds, cfg.load.Duration, load0, load1)
	fmt.Fprintln(out, "| contender | requests/s, median (range) | server CPU µs/request, median (range) |")
	fmt.Fprintln(out, "|---|---:|---:|")
	for i, c := range cs {
		fmt.Fprintf(out, "| %s | %s | %s |\n", c.name(), spreadOf(rates(results[i])).format("%.0f"), spreadOf(cpus(results[i])).format("%.1f"))
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "Ratios are medians (and ranges) of per-round ratios; CPU differences are per round too.")
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| comparison | throughput ratio | CPU µs/request difference |")
	fmt.Fprintln(out, "|---|---:|---:|")
	throughput := func(a, b round) float64 { return a.perSecond / b.perSecond }
	cpuDiff := func(a, b round) float64 { return float64(a.cpuPerRequest-b.cpuPerRequest) / float64(time.Microsecond) }
	for _, store := range cfg.stores {
		for _, before := range []bool{false, true} {
			p, u := find(cs, kindProtected, store, before), find(cs, kindUnprotected, store, before)
			if p < 0 || u < 0 {
				continue
			}
			fmt.Fprintf(out, "| %s / %s | **%s** | %s |\n", cs[p].name(), cs[u].name(),
				spreadOf(perRound(results[p], results[u], throughput)).format("%.2f"),
				spreadOf(perRound(results[p], results[u], cpuDiff)).format("%+.1f"))
		}
		if p, pb := find(cs, kindProtected, store, false), find(cs, kindProtected, store, true); p >= 0 && pb >= 0 {
			fmt.Fprintf(out, "| %s / %s | %s | %s |\n", cs[p].name(), cs[pb].name(),
				spreadOf(perRound(results[p], results[pb], throughput)).format("%.2f"),
				spreadOf(perRound(results[p], results[pb], cpuDiff)).format("%+.1f"))
		}
	}
	reportOneCommit(out, cfg, cs, results)
	if u, pl := find(cs, kindUnprotected, "memory", false), find(cs, kindPlain, "memory", false); u >= 0 && pl >= 0 {
		fmt.Fprintf(out, "| unprotected reference handler / plain net/http handler, memory | %s | %s |\n",
			spreadOf(perRound(results[u], results[pl], throughput)).format("%.2f"),
			spreadOf(perRound(results[u], results[pl], cpuDiff)).format("%+.1f"))
	}
}
