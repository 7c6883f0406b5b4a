// Package runlog is a run's progress log: phases, warnings, the agent's
// text and tool calls, and a closing summary.
//
// In file mode (the default) it goes to a file (.sanddune/logs/<run>-<ts>.log
// by the engine's choice) and a `tail -f` hint is printed on the terminal's
// hint stream. In stdout mode it goes to a Terminal, shared by the runs of a
// process, with every line prefixed by the run's name. Env values never
// reach it: callers log keys only.
package runlog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/missingstudio/sanddune/sdk"
)

// Mode says where the log goes.
type Mode string

const (
	File   Mode = "file"
	Stdout Mode = "stdout"
)

// flushEvery is how often a file log is flushed for `tail -f`.
const flushEvery = 250 * time.Millisecond

// MaxRunName bounds a run name, in bytes: the log file
// (<run>-<stamp>.log), the patch of uncommitted sandbox work
// (<run>-<stamp>.patch) and the temp worktree are named after it, and a
// file name stops at 255 bytes.
const MaxRunName = 200

// CheckRunName reports a run name too long to name the run's files.
func CheckRunName(name string) error {
	if len(name) > MaxRunName {
		return fmt.Errorf("run name %q… is %d bytes long, at most %d: the run's log file and worktree are named after it", name[:40], len(name), MaxRunName)
	}
	return nil
}

// Options configure Open.
type Options struct {
	Run  string
	Mode Mode // File when empty
	// Path is the log file (file mode).
	Path string
	// Terminal shows stdout-mode progress and the file-mode hint (Stdio()
	// when nil).
	Terminal *Terminal
	// Cancelled, once it returns true, makes steps and the run that end in
	// an error say "cancelled" rather than "failed".
	Cancelled func() bool
	// Redact hides secret values in every line (core/internal/redact).
	Redact func(string) string
}

// Log is one run's log. Its methods are safe for concurrent use.
type Log struct {
	mode   Mode
	prefix string
	term   *Terminal
	path   string
	// cancelled: see Options.Cancelled.
	cancelled func() bool
	redact    func(string) string

	mu     sync.Mutex
	waited bool // the last sandbox progress report was waiting
	file   *os.File
	w      *bufio.Writer
	dirty  bool
	stop   chan struct{}
	closed bool
}

// Open starts a run's log. In file mode it creates the file (and its
// directory) and prints the tail hint.
func Open(o Options) (*Log, error) {
	if o.Terminal == nil {
		o.Terminal = Stdio()
	}
	if o.Mode == "" {
		o.Mode = File
	}
	l := &Log{mode: o.Mode, term: o.Terminal, cancelled: o.Cancelled, redact: o.Redact}
	if l.cancelled == nil {
		l.cancelled = func() bool { return false }
	}
	if l.redact == nil {
		l.redact = func(s string) string { return s }
	}
	if o.Run != "" {
		l.prefix = "[" + o.Run + "] "
	}
	if o.Mode == Stdout {
		return l, nil
	}
	if o.Mode != File {
		return nil, fmt.Errorf("unknown log mode %q (want file or stdout)", o.Mode)
	}
	if err := os.MkdirAll(filepath.Dir(o.Path), 0o755); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	// 0600: a log holds what the agent and the hooks printed.
	f, err := os.OpenFile(o.Path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log file: %w", err)
	}
	l.file, l.w, l.path = f, bufio.NewWriterSize(f, 64<<10), o.Path
	l.stop = make(chan struct{})
	go l.flusher()
	fmt.Fprintf(l.w, "--- run %s started %s ---\n", o.Run, time.Now().UTC().Format(time.RFC3339))
	if !l.term.noHint {
		l.term.Eprintln(l.prefix + "logging to " + o.Path + "\n  tail -f " + o.Path)
	}
	return l, nil
}

// Path is the log file, empty in stdout mode.
func (l *Log) Path() string { return l.path }

func (l *Log) flusher() {
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.mu.Lock()
			if l.dirty && !l.closed {
				l.w.Flush()
				l.dirty = false
			}
			l.mu.Unlock()
		}
	}
}

// line writes one entry. It must be called with l.mu held.
func (l *Log) line(s string) {
	if l.closed {
		return
	}
	s = l.redact(s)
	if l.mode == Stdout {
		l.term.Println(l.prefix + s)
		return
	}
	l.w.WriteString(time.Now().Format("15:04:05 "))
	l.w.WriteString(s)
	l.w.WriteByte('\n')
	l.dirty = true
}

func (l *Log) lines(s string) {
	for _, ln := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		l.line(ln)
	}
}

// Info logs a status line.
func (l *Log) Info(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines(fmt.Sprintf(format, args...))
}

// Warn logs a warning; in file mode it also goes to the hint stream, so it
// is not missed.
func (l *Log) Warn(format string, args ...any) {
	msg := "warning: " + fmt.Sprintf(format, args...)
	l.mu.Lock()
	l.lines(msg)
	l.mu.Unlock()
	if l.mode == File {
		l.term.Eprintln(l.prefix + l.redact(msg))
	}
}

// SandboxProgress logs a progress report of the sandbox provider, as
// "waiting: msg" when it waits. In file mode a report that waits, and the
// one after it, also go to the hint stream: a run waiting in a queue must
// not look hung on the terminal.
func (l *Log) SandboxProgress(waiting bool, msg string) {
	if waiting {
		msg = "waiting: " + msg
	}
	l.mu.Lock()
	l.lines(msg)
	hint := l.mode == File && !l.closed && (waiting || l.waited)
	l.waited = waiting
	l.mu.Unlock()
	if hint {
		l.term.Eprintln(l.prefix + l.redact(msg))
	}
}

// Error logs a failure.
func (l *Log) Error(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines("error: " + fmt.Sprintf(format, args...))
}

// Output logs a line of command output (hooks, expressions), indented.
func (l *Log) Output(label, line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.line("  " + label + "| " + line)
}

// Text logs one block of agent text (a text event), line by line.
func (l *Log) Text(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines(s)
}

// ToolCall logs an agent tool call.
func (l *Log) ToolCall(name, arg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(arg) > 200 {
		arg = arg[:200] + "…"
	}
	l.line("→ " + name + "(" + strings.ReplaceAll(arg, "\n", " ") + ")")
}

// Phase is a step in progress.
type Phase struct {
	log   *Log
	msg   string
	start time.Time
	once  sync.Once
}

// Phase starts a step; end it with Done.
func (l *Log) Phase(msg string) *Phase {
	p := &Phase{log: l, msg: msg, start: time.Now()}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mode == Stdout {
		l.term.start(p)
	} else {
		l.line(msg + "...")
	}
	return p
}

// Done ends the step, as failed when err is not nil.
func (p *Phase) Done(err error) {
	p.once.Do(func() {
		l := p.log
		s := fmt.Sprintf("%s done (%s)", p.msg, time.Since(p.start).Round(100*time.Millisecond))
		if err != nil {
			s = fmt.Sprintf("%s %s (%s)", p.msg, l.failed(err), time.Since(p.start).Round(100*time.Millisecond))
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.mode == Stdout {
			l.term.end(p, l.prefix+s)
			return
		}
		l.line(s)
	})
}

// failed says how a step that ended in err ended.
func (l *Log) failed(err error) string {
	if errors.Is(err, context.Canceled) || l.cancelled() {
		return "cancelled"
	}
	return "failed"
}

// Summary is the end-of-run report.
type Summary struct {
	Iterations    int
	MaxIterations int
	Signal        string
	Commits       int
	Branch        string
	Usage         *sdk.Usage
	// Budgets are the run's token budgets, each as "1,234 of 5,000
	// tokens (run)"; Stopped says one of them stopped the run.
	Budgets   []string
	Stopped   bool
	Elapsed   time.Duration
	Preserved string
	PatchPath string
	// EgressDenied counts the refusals of the sandbox's egress policy,
	// EgressTargets says which.
	EgressDenied  int
	EgressTargets string
	Err           error
}

// Summary logs the end-of-run report.
func (l *Log) Summary(s Summary) {
	var b strings.Builder
	if s.Stopped {
		fmt.Fprintf(&b, "run stopped after %s\n", s.Elapsed.Round(100*time.Millisecond))
	} else if s.Err != nil {
		fmt.Fprintf(&b, "run %s after %s\n", l.failed(s.Err), s.Elapsed.Round(100*time.Millisecond))
	} else {
		fmt.Fprintf(&b, "run complete in %s\n", s.Elapsed.Round(100*time.Millisecond))
	}
	if s.Signal != "" {
		fmt.Fprintf(&b, "  iterations: %d/%d (completion signal %s)\n", s.Iterations, s.MaxIterations, s.Signal)
	} else {
		fmt.Fprintf(&b, "  iterations: %d/%d (no completion signal)\n", s.Iterations, s.MaxIterations)
	}
	fmt.Fprintf(&b, "  commits:    %d on %s\n", s.Commits, s.Branch)
	if u := s.Usage; u != nil {
		fmt.Fprintf(&b, "  tokens:     %d in, %d cache write, %d cache read, %d out\n",
			u.InputTokens, u.CacheCreationInputTokens, u.CacheReadInputTokens, u.OutputTokens)
	}
	for _, bu := range s.Budgets {
		fmt.Fprintf(&b, "  budget:     %s\n", bu)
	}
	if s.EgressDenied > 0 {
		fmt.Fprintf(&b, "  egress:     %d refused: %s\n", s.EgressDenied, s.EgressTargets)
	}
	if s.Preserved != "" {
		fmt.Fprintf(&b, "  worktree preserved at %s\n", s.Preserved)
	}
	if s.PatchPath != "" {
		fmt.Fprintf(&b, "  uncommitted sandbox work saved to %s\n", s.PatchPath)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines(b.String())
}

// Close flushes and closes the log file.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	if l.file == nil {
		return nil
	}
	close(l.stop)
	err := l.w.Flush()
	if cerr := l.file.Close(); err == nil {
		err = cerr
	}
	return err
}
