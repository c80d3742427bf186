package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// clockTicks is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux build that matters here).
const clockTicks = 100

// backendMeter reads the CPU time of the PostgreSQL backends that serve
// one contender: the connections whose application_name is the
// contender's own (withAppName), looked up in pg_stat_activity and read
// from /proc, so it works when the database runs on this host.
type backendMeter struct {
	conn    *pgx.Conn
	appName string
}

// appNameOf is the application_name a Postgres contender's connections
// carry.
func appNameOf(c *contender, index int) string {
	name := "serverbench-" + strconv.Itoa(index) + "-" + c.kind
	if c.before {
		name += "-before"
	}
	return name
}

// withAppName returns dsn (a URL or a key=value string) with
// application_name set to name.
func withAppName(dsn, name string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("application_name", name)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " application_name=" + name
}

// sample returns the CPU time so far of each backend of m's contender,
// by process id. A backend whose /proc entry cannot be read (a database
// on another host) makes it fail.
func (m *backendMeter) sample(ctx context.Context) (map[int]time.Duration, error) {
	rows, err := m.conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1`, m.appName)
	if err != nil {
		return nil, err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, err
	}
	out := make(map[int]time.Duration, len(pids))
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(int(pid)) + "/stat")
		if os.IsNotExist(err) {
			continue // the backend ended since the query
		}
		if err != nil {
			return nil, err
		}
		cpu, err := procCPU(string(b))
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		out[int(pid)] = cpu
	}
	return out, nil
}

// procCPU is utime + stime of a /proc/<pid>/stat line. The command name,
// field 2, is in parentheses and may hold spaces, so fields are counted
// from the last ')'.
func procCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("short stat line %q", stat)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// used is the CPU the backends spent between two samples; a backend
// that started in between counts from zero, one that ended is lost.
func used(before, after map[int]time.Duration) time.Duration {
	var d time.Duration
	for pid, t := range after {
		d += t - before[pid]
	}
	return d
}

// startMeters gives each Postgres contender a backendMeter on one
// monitoring connection; with none to measure, or no connection, it
// returns a no-op closer and leaves the meters nil.
func startMeters(ctx context.Context, cfg config, cs []*contender) func() {
	if cfg.postgres == "" {
		return func() {}
	}
	conn, err := pgx.Connect(ctx, cfg.postgres)
	if err != nil {
		return func() {}
	}
	for _, c := range cs {
		if c.store == "postgres" {
			c.meter = &backendMeter{conn: conn, appName: c.appName}
		}
	}
	return func() { _ = conn.Close(context.Background()) }
}

// reportBackend prints the Postgres backends' CPU per request of each
// contender that has it in every round.
func reportBackend(out io.Writer, cs []*contender, results [][]round) {
	var lines []string
	for i, c := range cs {
		xs := make([]float64, 0, len(results[i]))
		for _, r := range results[i] {
			if r.backendPerRequest < 0 {
				break
			}
			xs = append(xs, float64(r.backendPerRequest)/float64(time.Microsecond))
		}
		if c.meter == nil || len(xs) == 0 || len(xs) < len(results[i]) {
			continue
		}
		lines = append(lines, fmt.Sprintf("| %s | %s |", c.name(), spreadOf(xs).format("%.0f")))
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, "| contender | Postgres backend CPU µs/request, median (range) |")
	fmt.Fprintln(out, "|---|---:|")
	for _, l := range lines {
		fmt.Fprintln(out, l)
	}
}
