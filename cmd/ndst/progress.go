package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressDelay is how long a command runs before its progress appears:
// quick commands never show any. Tests shorten it.
var progressDelay = time.Second

// progress tells a person at a terminal what a long command is doing: a line
// on stderr, only when stderr is a terminal, once the command has run for
// progressDelay, redrawn in place (a bar when the amount of work is known, a
// spinner with the elapsed time otherwise), and erased before the command
// prints its result. stdout is never touched, so pipes and --json stay clean.
//
// All methods are safe for concurrent use and do nothing on a nil *progress.
type progress struct {
	w     io.Writer
	mu    sync.Mutex
	what  string
	done  int
	total int // 0: unknown
	timer *time.Timer
	bar   *progressbar.ProgressBar
	ended bool
}

// isTerminal reports whether w is a terminal; tests replace it.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// startProgress begins reporting what the command is doing; it returns nil
// (which reports nothing) unless stderr is a terminal. With -v the command
// prints its own progress lines, so none is drawn.
func (g *globalOptions) startProgress(what string) *progress {
	if g.verbose > 0 || !isTerminal(g.stderr) {
		return nil
	}
	p := &progress{w: g.stderr, what: what}
	p.timer = time.AfterFunc(progressDelay, p.show)
	return p
}

func (p *progress) show() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended || p.bar != nil {
		return
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(p.what),
		progressbar.OptionSetElapsedTime(true), progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100 * time.Millisecond), progressbar.OptionSetRenderBlankState(true),
	}
	max := -1
	if p.total > 0 {
		max = p.total
		opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionFullWidth())
	} else {
		opts = append(opts, progressbar.OptionSpinnerType(14), progressbar.OptionSetSpinnerChangeInterval(200*time.Millisecond))
	}
	p.bar = progressbar.NewOptions(max, opts...)
	if p.total > 0 {
		_ = p.bar.Set(p.done)
	}
}

// describe changes what the line says the command is doing.
func (p *progress) describe(what string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.what = what
	if p.bar != nil && !p.ended {
		p.bar.Describe(what)
	}
}

// set reports that done of total steps are complete.
func (p *progress) set(done, total int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.total = done, total
	if p.bar != nil && !p.ended {
		if p.bar.GetMax() != total {
			p.bar.ChangeMax(total)
		}
		_ = p.bar.Set(done)
	}
}

// stop erases the line; the command's result follows.
func (p *progress) stop() {
	if p == nil {
		return
	}
	p.timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.ended = true
	if p.bar != nil {
		_ = p.bar.Finish() // with ClearOnFinish: erases the line, and stops the spinner's redraws
		_ = p.bar.Clear()
	}
}

// progressLines returns a callback for a command's own progress messages:
// with -v each becomes a line on stderr; otherwise it describes p, prefixed.
func (g *globalOptions) progressLines(p *progress, prefix string) func(string) {
	return func(what string) {
		if g.verbose > 0 {
			fmt.Fprintf(g.stderr, "ndst: %s%s\n", prefix, what)
			return
		}
		p.describe(prefix + what)
	}
}
