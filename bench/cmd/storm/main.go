// Command storm measures retry strategies over real loopback HTTP against
// a load-shedding server it starts as a separate process (this same
// binary, with -serve): a herd of N callers released at once through ONE
// shared client per strategy, against K slots that shed the rest with
// 503; then a total outage (503 to everything) at a steady rate of
// callers. Strategies alternate within each round, and the tables show
// medians with ranges over the rounds.
//
//	go run ./bench/cmd/storm -n 200 -slots 8 -service 10ms -rounds 5
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"time"

	"github.com/idemkit/idem/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "storm:", err)
		os.Exit(1)
	}
}

type options struct {
	n, slots, rounds, retryAfter int
	service, outage, adapted     time.Duration
	rate                         float64
	serve, inProcess             bool
	only                         string
}

func run(ctx context.Context, args []string, out io.Writer) error {
	var o options
	fs := flag.NewFlagSet("storm", flag.ContinueOnError)
	fs.IntVar(&o.n, "n", 200, "callers released at once (N)")
	fs.IntVar(&o.slots, "slots", 8, "requests the server serves at a time (K)")
	fs.DurationVar(&o.service, "service", 10*time.Millisecond, "how long a served request holds its slot")
	fs.IntVar(&o.retryAfter, "retry-after", 0, "Retry-After seconds on every 503 (0: none)")
	fs.IntVar(&o.rounds, "rounds", 5, "rounds; each runs every strategy once")
	fs.DurationVar(&o.outage, "outage", 3*time.Second, "length of the outage run (0: skip it)")
	fs.DurationVar(&o.adapted, "adapted", time.Second, "last part of the outage run shown as adapted")
	fs.Float64Var(&o.rate, "rate", 500, "callers started per second in the outage run")
	fs.BoolVar(&o.inProcess, "in-process", false, "serve from this process instead of a child process")
	fs.StringVar(&o.only, "only", "", "run only the strategies whose name contains this")
	fs.BoolVar(&o.serve, "serve", false, "internal: be the server, print its URL, serve until stdin closes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.n < 1 || o.slots < 1 || o.rounds < 1 || o.rounds > 100 || o.rate <= 0 {
		return errors.New("need n >= 1, slots >= 1, 1 <= rounds <= 100, rate > 0")
	}
	if o.serve {
		return serve(o)
	}
	url, stopServer, err := startServer(ctx, o)
	if err != nil {
		return err
	}
	defer stopServer()
	return measure(ctx, o, url, out)
}

// serve is the child process: it listens on 127.0.0.1, prints its URL
// and serves until its stdin is closed (the parent ended).
func serve(o options) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: bench.NewShedServer(o.slots, o.service, o.retryAfter), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = srv.Close()
	}()
	fmt.Printf("http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// startServer starts the server in a child process (or in this one) and
// returns its URL and how to stop it.
func startServer(ctx context.Context, o options) (string, func(), error) {
	if o.inProcess {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", nil, err
		}
		srv := &http.Server{Handler: bench.NewShedServer(o.slots, o.service, o.retryAfter), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.CommandContext(ctx, self, "-serve", "-slots", fmt.Sprint(o.slots),
		"-service", o.service.String(), "-retry-after", fmt.Sprint(o.retryAfter))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = stdin.Close() // the child exits when its stdin closes
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("server process: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}

func measure(ctx context.Context, o options, url string, out io.Writer) error {
	var contenders []bench.StormContender
	for _, c := range bench.StormContenders() {
		if strings.Contains(c.Name, o.only) {
			contenders = append(contenders, c)
		}
	}
	if len(contenders) == 0 {
		return fmt.Errorf("no strategy matches %q", o.only)
	}
	fmt.Fprintf(out, "storm: N=%d callers at once through one shared client, K=%d slots of %s, Retry-After %d s, %d rounds (medians, ranges)\n\n",
		o.n, o.slots, o.service, o.retryAfter, o.rounds)
	rounds := make([][]bench.StormResult, o.rounds)
	for r := range o.rounds {
		rounds[r] = make([]bench.StormResult, len(contenders))
		// Each round starts with another strategy, so none always runs
		// first on a cold machine.
		for k := range contenders {
			i := (r + k) % len(contenders)
			res, err := bench.RunStorm(ctx, bench.StormConfig{URL: url, Callers: o.n}, contenders[i])
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "round %d: %-45s failed %3d, %.2f attempts/caller, makespan %s\n",
				r+1, res.Contender, res.Failed, res.AttemptsPerCaller(), res.Makespan.Round(time.Millisecond))
			rounds[r][i] = res
		}
	}
	if err := bench.WriteStormTable(out, rounds, contenders, contenders[0].Name); err != nil {
		return err
	}
	if o.outage <= 0 {
		return nil
	}
	fmt.Fprintf(out, "\noutage: every request answered 503, callers started at %.0f/s for %s through one shared client, %d rounds; adapted = callers started in the last %s\n\n",
		o.rate, o.outage, o.rounds, o.adapted)
	outages := make([][]bench.StormOutageResult, o.rounds)
	cfg := bench.StormOutageConfig{URL: url, Rate: o.rate, Duration: o.outage, Adapted: o.adapted}
	var outageContenders []bench.StormContender
	for _, c := range contenders {
		if !strings.Contains(c.Name, "retryablehttp") { // its 1–30 s waits would stretch a run to a minute
			outageContenders = append(outageContenders, c)
		}
	}
	for r := range o.rounds {
		outages[r] = make([]bench.StormOutageResult, len(outageContenders))
		for k := range outageContenders {
			i := (r + k) % len(outageContenders)
			res, err := bench.RunStormOutage(ctx, cfg, outageContenders[i])
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "outage round %d: %-45s %.3f whole, %.3f adapted\n", r+1, res.Contender, res.Amplification(), res.AdaptedAmplification())
			outages[r][i] = res
		}
	}
	return bench.WriteStormOutageTable(out, outages, outageContenders)
}
