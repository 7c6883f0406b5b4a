package sandboxkit

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"

	"github.com/creack/pty"

	"github.com/missingstudio/sanddune/sdk"
)

// RunTTY runs c like Run, but on a new pseudo-terminal connected to tty:
// the command leads a new session whose controlling terminal it is, reads
// what the user types and writes to the terminal, and tty.Resize changes
// the terminal's size (the kernel tells the command with SIGWINCH).
// c.Stdin must be nil.
func (r *Runner) RunTTY(ctx context.Context, c Command, tty sdk.TTY) (sdk.ExecResult, error) {
	if c.Stdin != nil {
		return sdk.ExecResult{}, errors.New("exec: a terminal command reads the terminal, not Command.Stdin")
	}
	return r.run(ctx, c, func() (stdio, error) { return newTerminal(tty) })
}

// terminal connects a command to a pseudo-terminal: the child gets the
// terminal end, the provider keeps the controlling end (master).
type terminal struct {
	master, tty *os.File
	t           sdk.TTY
	closeOnce   sync.Once
	done        chan struct{} // closed once the output reached EOF
}

func newTerminal(t sdk.TTY) (*terminal, error) {
	master, tty, err := pty.Open()
	if err != nil {
		return nil, err
	}
	if t.Size != (sdk.WindowSize{}) {
		if err := pty.Setsize(master, winsize(t.Size)); err != nil {
			_ = master.Close()
			_ = tty.Close()
			return nil, err
		}
	}
	return &terminal{master: master, tty: tty, t: t, done: make(chan struct{})}, nil
}

func winsize(s sdk.WindowSize) *pty.Winsize { return &pty.Winsize{Rows: s.Rows, Cols: s.Cols} }

// attach makes the terminal the command's stdio and the controlling
// terminal (its fd 0) of the new session the command leads.
func (p *terminal) attach(cmd *exec.Cmd) {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.tty, p.tty, p.tty
	a := cmd.SysProcAttr
	a.Setsid, a.Setctty, a.Ctty, a.Setpgid = true, true, 0, false
}

func (p *terminal) closeChild() { _ = p.tty.Close() }

func (p *terminal) closeParent() { p.closeOnce.Do(func() { _ = p.master.Close() }) }

// start copies input to the terminal, the terminal's output to tty.Output
// and size changes to the terminal. Reading the terminal fails (EIO) once
// no process holds its other end any more: that is the output's end.
func (p *terminal) start() <-chan struct{} {
	if p.t.Stdin != nil {
		go func() { _, _ = io.Copy(p.master, p.t.Stdin) }()
	}
	go func() {
		for {
			select {
			case size, ok := <-p.t.Resize:
				if !ok {
					return
				}
				_ = pty.Setsize(p.master, winsize(size))
			case <-p.done:
				return
			}
		}
	}()
	go func() {
		defer close(p.done)
		_, _ = io.Copy(p.t.Output, p.master)
	}()
	return p.done
}
