package bubblewrap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// setupAttempts bounds how many times an Exec starts bwrap when bwrap fails
// before running the command: its setup races with the host (a mount under
// a shared mount such as /var/lib/docker going away while bwrap remounts
// the root read-only, a hidden path vanishing), so a later attempt usually
// succeeds.
const setupAttempts = 5

// Exec runs argv (or `sh -c shell`) in a fresh bwrap (own mount, IPC and
// UTS namespaces) that joins the sandbox's PID namespace, so processes
// outlive their Exec like in a container and pids mean the same in every
// Exec. Cancellation and timeouts SIGKILL bwrap's process group and then
// every process carrying the Exec's marker variable, however detached.
//
// Neither bwrap nor the command gets a parent-death signal: bwrap joins a
// PID namespace through an intermediate process that exits at a moment of
// the scheduler's choosing, and --die-with-parent would tie the command to
// it (under load that exit comes after the exec and SIGKILLs the command).
// Processes still end with the plugin: the keeper dies with it, and with
// the keeper its whole PID namespace.
func (s *sandbox) Exec(ctx context.Context, req sdk.ExecRequest, out sdk.OutputFunc) (sdk.ExecResult, error) {
	return s.exec(ctx, req, func(c sandboxkit.Command) (sdk.ExecResult, gate, error) {
		g := &setupGate{out: out}
		res, err := s.runner.Run(ctx, c, g.add)
		return res, g, err
	})
}

// ExecTTY runs a command like Exec, but on a pseudo-terminal that stays
// its controlling terminal (bwrap gets no --new-session).
func (s *sandbox) ExecTTY(ctx context.Context, req sdk.ExecRequest, tty sdk.TTY) (sdk.ExecResult, error) {
	return s.exec(ctx, req, func(c sandboxkit.Command) (sdk.ExecResult, gate, error) {
		g := &ttyGate{out: tty.Output}
		t := tty
		t.Output = g
		res, err := s.runner.RunTTY(ctx, c, t)
		return res, g, err
	})
}

// exec starts bwrap with run until the command ran (see setupAttempts).
func (s *sandbox) exec(ctx context.Context, req sdk.ExecRequest, run func(sandboxkit.Command) (sdk.ExecResult, gate, error)) (sdk.ExecResult, error) {
	argv, err := sandboxkit.Argv(req, "sh")
	if err != nil {
		return sdk.ExecResult{}, err
	}
	if req.Sudo {
		return sdk.ExecResult{}, fmt.Errorf("bubblewrap: sudo: %w", sdk.ErrNotSupported)
	}
	cwd, err := s.resolveCwd(req.Cwd)
	if err != nil {
		return sdk.ExecResult{}, fmt.Errorf("exec: cwd: %w", err)
	}
	if s.runner.Closed() {
		return sdk.ExecResult{}, sandboxkit.ErrClosed
	}
	if !s.keeper.alive() {
		return sdk.ExecResult{}, errors.New("exec: the sandbox's keeper process died")
	}
	mark := randomHex()
	c := sandboxkit.Command{
		Env:         sandboxkit.MergeEnv(s.env, req.Env, map[string]string{execMarker: mark}),
		Stdin:       req.Stdin,
		Timeout:     req.Timeout,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
		Kill:        func(pgid int) { killTree(pgid, execMarker+"="+mark) },
		Linger:      true,
	}
	command := append([]string{"--chdir", cwd, "--"}, argv...)
	for attempt := 1; ; attempt++ {
		res, ran, err := s.attempt(c, command, run, attempt == setupAttempts)
		if ran || err != nil {
			if err != nil && !errors.Is(err, ctx.Err()) {
				err = fmt.Errorf("exec: %w", err)
			}
			return res, err
		}
	}
}

// gate holds back an attempt's output as long as it may be bwrap's setup
// errors.
type gate interface {
	// opened reports whether output other than setup errors came.
	opened() bool
	// release passes held output on and lets the rest through.
	release()
}

// attempt runs bwrap once. ran is false when bwrap failed before running
// the command and the Exec may try again: its error message is then
// dropped, unless final.
func (s *sandbox) attempt(c sandboxkit.Command, command []string, run func(sandboxkit.Command) (sdk.ExecResult, gate, error), final bool) (res sdk.ExecResult, ran bool, err error) {
	status, statusW, err := os.Pipe()
	if err != nil {
		return sdk.ExecResult{}, false, err
	}
	defer status.Close()
	nsArgs, files := s.keeper.joinArgs(s.egress != nil)
	c.ExtraFiles = append(files, statusW)
	c.Argv = append(append([]string{s.bwrap}, nsArgs...), "--json-status-fd", strconv.Itoa(2+len(c.ExtraFiles)))
	tail := append(s.mountArgs(), command...)
	if s.egress != nil {
		var done func()
		if tail, c.ExtraFiles, done, err = s.egress.wrapped(tail, c.ExtraFiles, s.keeper.ownerNS != nil); err != nil {
			statusW.Close()
			return sdk.ExecResult{}, true, fmt.Errorf("egress: %w", err)
		}
		defer done()
	}
	c.Argv = append(append(c.Argv, namespaceArgs(s.netNone)...), tail...)
	res, g, err := run(c)
	statusW.Close()
	if err == nil && !res.TimedOut && res.ExitCode == 1 && !g.opened() && !final && !commandRan(status) {
		return res, false, nil
	}
	g.release()
	return res, true, err
}

// mountArgs are the bwrap mount arguments of an Exec: the host root
// read-only, the hide entries that exist now (a hidden path that went away
// since Create, such as the docker socket of a stopped dockerd, would make
// bwrap fail), each once (/var/run/docker.sock is often /run/docker.sock),
// then the sandbox's roots.
func (s *sandbox) mountArgs() []string {
	args := []string{"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"}
	seen := map[string]bool{}
	for _, h := range s.hide {
		hidden, isDir, ok := s.hidden(h)
		if !ok || seen[hidden] {
			continue
		}
		seen[hidden] = true
		if isDir {
			args = append(args, "--tmpfs", hidden)
		} else {
			args = append(args, "--ro-bind", "/dev/null", hidden)
		}
	}
	return append(args, s.binds...)
}

// commandRan reads bwrap's JSON status documents: bwrap reports an exit
// code only when it executed the command.
func commandRan(status io.Reader) bool {
	d := json.NewDecoder(status)
	for {
		var doc map[string]any
		if err := d.Decode(&doc); err != nil {
			return false
		}
		if _, ok := doc["exit-code"]; ok {
			return true
		}
	}
}

// setupGate passes an attempt's output on, except that it holds back
// stderr lines starting with "bwrap: " as long as nothing else came: those
// are bwrap's setup errors when the command never ran. Any other line
// opens the gate (held lines first). Runner.Run calls add one at a time.
type setupGate struct {
	out  sdk.OutputFunc
	open bool
	held []sdk.OutputLine
}

func (g *setupGate) opened() bool { return g.open }

func (g *setupGate) add(l sdk.OutputLine) {
	if !g.open && l.Stream == sdk.Stderr && bytes.HasPrefix(l.Text, []byte("bwrap: ")) {
		l.Text = bytes.Clone(l.Text)
		g.held = append(g.held, l)
		return
	}
	g.release()
	g.out(l)
}

// release opens the gate, passing held lines on.
func (g *setupGate) release() {
	g.open = true
	for _, l := range g.held {
		g.out(l)
	}
	g.held = nil
}

// ttyGate is setupGate for a terminal's byte stream: it holds output back
// as long as all of it reads as lines starting with "bwrap: ".
type ttyGate struct {
	out  io.Writer
	open bool
	held []byte
}

func (g *ttyGate) opened() bool { return g.open }

func (g *ttyGate) Write(p []byte) (int, error) {
	if g.open {
		return g.out.Write(p)
	}
	g.held = append(g.held, p...)
	if !setupText(g.held) {
		g.release()
	}
	return len(p), nil
}

func (g *ttyGate) release() {
	g.open = true
	if len(g.held) > 0 {
		_, _ = g.out.Write(g.held)
		g.held = nil
	}
}

// setupText reports whether b may be (the start of) bwrap's setup errors.
func setupText(b []byte) bool {
	const prefix = "bwrap: "
	for _, line := range bytes.Split(b, []byte("\n")) {
		n := min(len(line), len(prefix))
		if string(line[:n]) != prefix[:n] {
			return false
		}
	}
	return true
}
