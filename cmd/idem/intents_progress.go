package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/idemkit/idem/keystore"
)

// reporter tells the operator how a resume goes, one settled intent at a
// time. done is called from several goroutines.
type reporter interface {
	done(o outcome)
	finish()
}

// newReporter draws a progress bar on stderr when bar is set, else prints
// one line per intent on stdout. The bar's last frame, drawn by finish,
// stays on the screen: it shows 100% and the count of intents settled.
func newReporter(stdout, stderr io.Writer, total int, bar bool) reporter {
	if !bar {
		return &lineReporter{out: stdout}
	}
	return &barReporter{
		out: stdout,
		bar: progressbar.NewOptions(total,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("resuming"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetRenderBlankState(true),
			// Not OptionClearOnFinish: it skips the frame at 100%, so the
			// last thing the operator saw was a bar short of the end.
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(stderr) }),
		),
	}
}

// lineReporter prints one line per settled intent.
type lineReporter struct {
	mu  sync.Mutex
	out io.Writer
}

func (r *lineReporter) done(o outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintln(r.out, outcomeLine(o))
}

func (r *lineReporter) finish() {}

// barReporter advances a progress bar and, once it is complete, lists the
// intents that did not succeed: those need the operator's eye.
type barReporter struct {
	bar *progressbar.ProgressBar
	out io.Writer

	mu        sync.Mutex
	unsettled []outcome
}

func (r *barReporter) done(o outcome) {
	if o.state != keystore.Succeeded {
		r.mu.Lock()
		r.unsettled = append(r.unsettled, o)
		r.mu.Unlock()
	}
	_ = r.bar.Add(1) // a terminal write error must not stop the resume
}

func (r *barReporter) finish() {
	_ = r.bar.Finish()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.unsettled {
		fmt.Fprintln(r.out, outcomeLine(o))
	}
}

// outcomeLine is one intent's result: state, key, name, status or error.
func outcomeLine(o outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s  %s", o.state, o.key)
	if o.name != "" {
		fmt.Fprintf(&b, "  %s", oneLineOf(o.name, 48))
	}
	if o.status != 0 {
		fmt.Fprintf(&b, "  %s", statusText(o.status))
	}
	if o.err != nil {
		fmt.Fprintf(&b, "  %s", oneLineOf(o.err.Error(), 200))
	}
	return b.String()
}

// isTerminal reports whether w is a terminal, where a progress bar can
// redraw itself.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
