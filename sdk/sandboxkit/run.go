package sandboxkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/procgroup"
)

// ErrClosed is returned by Runner.Run once the Runner is closed.
var ErrClosed = errors.New("sandbox is closed")

// drainDelay bounds the wait for a command's output once it ended or was
// killed: a process that left its group may still hold the pipes.
const drainDelay = 2 * time.Second

// Argv returns the argv an ExecRequest runs: req.Argv, or shell -c
// req.Shell for a shell string (shell names sh: "/bin/sh" on the host, "sh"
// in a container). It fails when both or neither are set.
func Argv(req sdk.ExecRequest, shell string) ([]string, error) {
	switch {
	case len(req.Argv) > 0 && req.Shell != "":
		return nil, errors.New("exec: set either argv or shell, not both")
	case req.Shell != "":
		return []string{shell, "-c", req.Shell}, nil
	case len(req.Argv) == 0 || req.Argv[0] == "":
		return nil, errors.New("exec: empty command")
	}
	return req.Argv, nil
}

// Command is one process for Runner.Run.
type Command struct {
	// Argv is the program and its arguments. A program name without a
	// slash is looked up in Env["PATH"] (not this process's PATH); a
	// relative one resolves against Dir.
	Argv []string
	// Dir is the working directory; empty means the plugin's.
	Dir string
	// Env is the whole environment: nothing is inherited.
	Env map[string]string
	// Stdin is written to the process and then closed; nil gives EOF at once.
	Stdin []byte
	// Timeout kills the command after this long; zero means none.
	Timeout time.Duration
	// ExtraFiles are passed from fd 3 on.
	ExtraFiles []*os.File
	// SysProcAttr, when set, replaces the default (own process group, and
	// SIGKILL when the plugin dies); it is used with Setpgid forced unless it sets
	// Setsid: either way the command leads a new process group.
	SysProcAttr *syscall.SysProcAttr
	// KillGrace, when positive, makes cancellation and timeouts send
	// SIGTERM to the process group first, and kill only when the command
	// has not exited after this long.
	KillGrace time.Duration
	// Kill kills the command's processes; nil sends SIGKILL to the process
	// group. Set it when processes can leave the group (setsid) and the
	// provider can find them.
	Kill func(pgid int)
	// Linger lets processes the command started outlive it. By default the
	// process group is killed once the command exits, so that background
	// jobs end with the Exec that started them.
	Linger bool
}

// Runner runs a sandbox's commands on this machine and tracks them, so
// that closing the sandbox kills them. The zero Runner is ready to use; it
// is safe for concurrent use.
type Runner struct {
	mu      sync.Mutex
	closed  bool
	groups  map[int]struct{} // process groups of running commands
	running sync.WaitGroup   // running Runs
}

// Run runs c, streaming its stdout and stderr lines to out, and returns how
// it ended; a non-zero exit is not an error. A command killed by signal n
// exits with 128+n. A timeout kills the command and sets TimedOut;
// cancelling ctx kills it and returns ctx.Err(); closing the Runner kills
// it and returns ErrClosed.
func (r *Runner) Run(ctx context.Context, c Command, out sdk.OutputFunc) (sdk.ExecResult, error) {
	return r.run(ctx, c, func() (stdio, error) { return newPipes(c.Stdin, out) })
}

// stdio connects one command to the provider.
type stdio interface {
	// attach sets the command's stdin, stdout and stderr (and may adjust
	// its SysProcAttr, a copy of its own).
	attach(cmd *exec.Cmd)
	// closeChild closes the ends the child inherited, once it started.
	closeChild()
	// start begins the transfers; the channel is closed once the output
	// reached EOF.
	start() <-chan struct{}
	// closeParent closes the provider's ends, abandoning pending transfers.
	closeParent()
}

func (r *Runner) run(ctx context.Context, c Command, newStdio func() (stdio, error)) (sdk.ExecResult, error) {
	if err := ctx.Err(); err != nil {
		return sdk.ExecResult{}, err
	}
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return sdk.ExecResult{}, errors.New("exec: empty command")
	}
	path, err := lookPath(c.Argv[0], c.Env["PATH"], c.Dir)
	if err != nil {
		return sdk.ExecResult{}, err
	}
	// By default the command dies with the plugin (its parent-death signal),
	// so an agent does not run on when sanddune and its plugins are killed.
	// The kernel sends that signal when the *thread* that started the child
	// exits, so this goroutine keeps its thread until the command ends.
	attr := procgroup.Attr()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if c.SysProcAttr != nil {
		a := *c.SysProcAttr
		a.Setpgid = !a.Setsid
		attr = &a
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        c.Argv,
		Dir:         c.Dir,
		Env:         EnvList(c.Env),
		ExtraFiles:  c.ExtraFiles,
		SysProcAttr: attr,
	}
	p, err := newStdio()
	if err != nil {
		return sdk.ExecResult{}, err
	}
	defer p.closeParent()
	p.attach(cmd)

	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		p.closeChild()
		return sdk.ExecResult{}, ErrClosed
	}
	err = cmd.Start()
	if err == nil {
		if r.groups == nil {
			r.groups = map[int]struct{}{}
		}
		r.groups[cmd.Process.Pid] = struct{}{}
		r.running.Add(1)
	}
	r.mu.Unlock()
	p.closeChild()
	if err != nil {
		return sdk.ExecResult{}, err
	}
	pgid := cmd.Process.Pid
	defer func() {
		r.mu.Lock()
		delete(r.groups, pgid)
		r.mu.Unlock()
		r.running.Done()
	}()
	kill := c.Kill
	if kill == nil {
		kill = killGroup
	}
	drained := p.start()

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var res sdk.ExecResult
	var waitErr, ctxErr error
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		ctxErr = ctx.Err()
		waitErr = stop(pgid, c.KillGrace, kill, waited)
	case <-timeout:
		res.TimedOut = true
		waitErr = stop(pgid, c.KillGrace, kill, waited)
	}
	if !c.Linger {
		killGroup(pgid)
	}
	select {
	case <-drained:
	case <-time.After(drainDelay):
		p.closeParent()
		<-drained
	}

	res.ExitCode = exitCode(cmd.ProcessState)
	if ctxErr != nil {
		return res, ctxErr
	}
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return res, waitErr
	}
	if r.Closed() {
		return res, ErrClosed
	}
	return res, nil
}

// Close makes later Runs fail with ErrClosed and SIGKILLs the process
// groups of the running ones. It reports whether r was already closed.
func (r *Runner) Close() (already bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	already, r.closed = r.closed, true
	for pgid := range r.groups {
		killGroup(pgid)
	}
	return already
}

// Wait waits until every Run has returned, or ctx is done.
func (r *Runner) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { r.running.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Closed reports whether Close was called.
func (r *Runner) Closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

func killGroup(pgid int) { _ = procgroup.Kill(pgid) }

// stop ends a cancelled or timed-out command: SIGTERM and a grace period
// first when grace is positive, then kill. It returns the leader's Wait
// error.
func stop(pgid int, grace time.Duration, kill func(int), waited <-chan error) error {
	if grace > 0 {
		_ = syscall.Kill(-pgid, syscall.SIGTERM) // pgid > 0: a started command's
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case err := <-waited:
			return err
		case <-t.C:
		}
	}
	kill(pgid)
	return <-waited
}

// exitCode follows the shell convention: 128+n for a death by signal n.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// lookPath finds name in pathEnv (a command's own PATH, not this
// process's); names with a slash and relative PATH entries resolve against
// dir. The error wraps exec.ErrNotFound.
func lookPath(name, pathEnv, dir string) (string, error) {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(dir, name)
		}
		return name, nil
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("exec %q: %w in the sandbox PATH", name, exec.ErrNotFound)
}

// pipes connects a command's stdio to the provider through pipes: stdin
// is written and closed, stdout and stderr lines go to out. The parent
// ends are closed exactly once, either after the output drained or to
// abandon it.
type pipes struct {
	childIn, childOut, childErr *os.File // nil childIn: /dev/null
	stdin, stdout, stderr       *os.File
	closeOnce                   sync.Once
	input                       []byte
	out                         sdk.OutputFunc
}

func newPipes(stdin []byte, out sdk.OutputFunc) (*pipes, error) {
	p := &pipes{input: stdin, out: out}
	var err error
	if p.stdout, p.childOut, err = os.Pipe(); err != nil {
		return nil, err
	}
	if p.stderr, p.childErr, err = os.Pipe(); err != nil {
		p.closeChild()
		p.closeParent()
		return nil, err
	}
	if stdin != nil {
		if p.childIn, p.stdin, err = os.Pipe(); err != nil {
			p.closeChild()
			p.closeParent()
			return nil, err
		}
	}
	return p, nil
}

func (p *pipes) attach(cmd *exec.Cmd) {
	cmd.Stdout, cmd.Stderr = p.childOut, p.childErr
	if p.childIn != nil {
		cmd.Stdin = p.childIn
	}
}

func (p *pipes) closeChild() {
	for _, f := range []*os.File{p.childIn, p.childOut, p.childErr} {
		if f != nil {
			_ = f.Close()
		}
	}
}

func (p *pipes) closeParent() {
	p.closeOnce.Do(func() {
		for _, f := range []*os.File{p.stdin, p.stdout, p.stderr} {
			if f != nil {
				_ = f.Close()
			}
		}
	})
}

// start writes stdin and sends stdout and stderr lines to out, one call at
// a time.
func (p *pipes) start() <-chan struct{} {
	if p.stdin != nil {
		go func() {
			_, _ = p.stdin.Write(p.input)
			_ = p.stdin.Close()
		}()
	}
	out := sdk.SyncOutput(p.out)
	var wg sync.WaitGroup
	for _, src := range []struct {
		r      io.Reader
		stream sdk.Stream
	}{{p.stdout, sdk.Stdout}, {p.stderr, sdk.Stderr}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := sdk.NewLineWriter(src.stream, out)
			_, _ = io.Copy(w, src.r)
			_ = w.Close()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}
