// Package hooks runs a run's setup hooks: shell commands (shell by design)
// on the host, in the worktree, or inside the sandbox.
//
// Host hooks run `sh -c` in their own process group, so a timeout or a
// cancelled run kills everything they started. Sandbox hooks go through
// the sandbox's Exec with a Shell command; cancelling its context makes the
// provider kill the process tree inside the sandbox.
package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/procgroup"
)

const tailBytes = 4 << 10

// Where a hook runs.
const (
	Host    = "host"
	Sandbox = "sandbox"
)

// Output receives a hook's output lines (stdout and stderr interleaved).
type Output func(where, command, line string)

// Error is a failed hook.
type Error struct {
	Where    string // Host or Sandbox
	Command  string
	ExitCode int
	TimedOut bool
	Timeout  time.Duration
	Tail     string // last output lines
	Err      error  // start, transport or cancellation error
}

func (e *Error) Error() string {
	var msg string
	switch {
	case e.Err != nil:
		msg = fmt.Sprintf("%s hook %q: %v", e.Where, e.Command, e.Err)
	case e.TimedOut:
		msg = fmt.Sprintf("%s hook %q timed out after %s (raise it with the hook's timeout attribute, or timeouts { hooks = ... } for every hook)", e.Where, e.Command, e.Timeout)
	default:
		msg = fmt.Sprintf("%s hook %q exited with code %d", e.Where, e.Command, e.ExitCode)
	}
	if t := bytes.TrimSpace([]byte(e.Tail)); len(t) > 0 {
		msg += ":\n    output:\n    " + strings.ReplaceAll(string(t), "\n", "\n    ")
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// RunHost runs hooks one after the other on the host with cwd dir and the
// process environment, stopping at the first failure.
func RunHost(ctx context.Context, dir string, hs []run.Hook, out Output) error {
	for _, h := range hs {
		if err := runHost(ctx, dir, h, out); err != nil {
			return err
		}
	}
	return nil
}

// RunParallel runs host hooks (cwd hostDir) and sandbox hooks all at once.
// The first failure cancels the others and is returned.
func RunParallel(ctx context.Context, hostDir string, host []run.Hook, sb sdk.Sandbox, sandbox []run.Hook, out Output) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	fail := func(err error) {
		once.Do(func() { first = err; cancel() })
	}
	for _, h := range host {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := runHost(ctx, hostDir, h, out); err != nil {
				fail(err)
			}
		}()
	}
	for _, h := range sandbox {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := RunSandbox(ctx, sb, h, out); err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	return first
}

func timeoutOf(h run.Hook) time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return run.DefaultHookTimeout
}

func runHost(ctx context.Context, dir string, h run.Hook, out Output) error {
	if err := ctx.Err(); err != nil {
		return &Error{Where: Host, Command: h.Command, Err: context.Cause(ctx)}
	}
	timeout := timeoutOf(h)
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(hctx, "sh", "-c", h.Command)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	cmd.Stdin = nil
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return procgroup.Kill(cmd.Process.Pid) }
	// Background children that keep the output pipe open do not hold the
	// hook up for longer than this once it has exited.
	cmd.WaitDelay = time.Second
	w := &lineWriter{emit: func(line []byte) {
		if out != nil {
			out(Host, h.Command, string(line))
		}
	}}
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	w.flush()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil
	}
	switch {
	case ctx.Err() != nil:
		return &Error{Where: Host, Command: h.Command, Err: context.Cause(ctx), Tail: w.tail()}
	case hctx.Err() != nil:
		return &Error{Where: Host, Command: h.Command, TimedOut: true, Timeout: timeout, Tail: w.tail()}
	case err == nil:
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return &Error{Where: Host, Command: h.Command, ExitCode: ee.ExitCode(), Tail: w.tail()}
	}
	return &Error{Where: Host, Command: h.Command, Err: err, Tail: w.tail()}
}

// RunSandbox runs one hook inside the sandbox, in its repo directory.
func RunSandbox(ctx context.Context, sb sdk.Sandbox, h run.Hook, out Output) error {
	if err := ctx.Err(); err != nil {
		return &Error{Where: Sandbox, Command: h.Command, Err: context.Cause(ctx)}
	}
	timeout := timeoutOf(h)
	// The provider enforces the timeout; the context is a backstop.
	hctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
	defer cancel()
	w := &lineWriter{}
	res, err := sb.Exec(hctx, sdk.ExecRequest{Shell: h.Command, Sudo: h.Sudo, Timeout: timeout}, func(l sdk.OutputLine) {
		w.add(l.Text, !l.Partial)
		if out != nil && !l.Partial {
			out(Sandbox, h.Command, string(l.Text))
		}
	})
	switch {
	case ctx.Err() != nil:
		return &Error{Where: Sandbox, Command: h.Command, Err: context.Cause(ctx), Tail: w.tail()}
	case hctx.Err() != nil || (err == nil && res.TimedOut):
		return &Error{Where: Sandbox, Command: h.Command, TimedOut: true, Timeout: timeout, Tail: w.tail()}
	case err != nil:
		return &Error{Where: Sandbox, Command: h.Command, Err: err, Tail: w.tail()}
	case res.ExitCode != 0:
		return &Error{Where: Sandbox, Command: h.Command, ExitCode: res.ExitCode, Tail: w.tail()}
	}
	return nil
}

// lineWriter splits output into lines for emit and keeps a bounded tail.
type lineWriter struct {
	mu   sync.Mutex
	emit func([]byte)
	part []byte
	last []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.part = append(w.part, p...)
			if len(w.part) > tailBytes {
				w.line(w.part)
				w.part = w.part[:0]
			}
			break
		}
		w.part = append(w.part, p[:i]...)
		w.line(w.part)
		w.part = w.part[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) add(p []byte, eol bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.part = append(w.part, p...)
	if eol || len(w.part) > tailBytes {
		w.line(w.part)
		w.part = w.part[:0]
	}
}

func (w *lineWriter) line(l []byte) {
	if w.emit != nil {
		w.emit(l)
	}
	w.last = append(w.last, l...)
	w.last = append(w.last, '\n')
	if len(w.last) > tailBytes {
		w.last = append(w.last[:0], w.last[len(w.last)-tailBytes:]...)
	}
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.part) > 0 {
		w.line(w.part)
		w.part = w.part[:0]
	}
}

func (w *lineWriter) tail() string {
	w.flush()
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.last)
}
