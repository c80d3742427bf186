package frameworks

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// layerLog keeps the layer's warnings and errors, which explain a failed
// cell (a lease lost, a key left reserved).
type layerLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *layerLog) Enabled(_ context.Context, level slog.Level) bool { return level >= slog.LevelWarn }

func (l *layerLog) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, b.String())
	l.mu.Unlock()
	return nil
}

func (l *layerLog) WithAttrs(attrs []slog.Attr) slog.Handler { return &attrLog{l, attrs} }
func (l *layerLog) WithGroup(string) slog.Handler            { return l }

// report logs what the layer said, the first few lines.
func (l *layerLog) report(t *testing.T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return
	}
	t.Logf("the layer logged %d warnings or errors, e.g.\n    %s", len(l.lines), strings.Join(l.lines[:min(len(l.lines), 5)], "\n    "))
}

// attrLog is layerLog with attributes from Logger.With.
type attrLog struct {
	log   *layerLog
	attrs []slog.Attr
}

func (a *attrLog) Enabled(ctx context.Context, level slog.Level) bool {
	return a.log.Enabled(ctx, level)
}

func (a *attrLog) Handle(ctx context.Context, r slog.Record) error {
	r = r.Clone()
	r.AddAttrs(a.attrs...)
	return a.log.Handle(ctx, r)
}

func (a *attrLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &attrLog{a.log, append(append([]slog.Attr{}, a.attrs...), attrs...)}
}
func (a *attrLog) WithGroup(string) slog.Handler { return a }
