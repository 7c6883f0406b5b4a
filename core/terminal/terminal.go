// Package terminal connects the user's terminal to an interactive agent
// session (the agent's TUI): raw mode while the session runs, window-size
// changes forwarded, and the terminal restored however the session ends
// (the agent exits or crashes, the run is cancelled, the plugin dies).
// Without a sandbox, Host runs the session on a pseudo-terminal on this
// machine.
package terminal

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/missingstudio/sanddune/sdk"
)

// Session runs one interactive session: it calls run with in and out
// attached as its terminal, and returns what run returns.
//
// When in is a terminal it is in raw mode while run runs (keys such as
// Ctrl-C go to the agent, which decides what they mean), SIGWINCH sends
// the new size on the TTY's Resize channel, and the terminal's settings
// are restored before Session returns, also when run fails or panics. A
// Read of the TTY's Stdin still pending when run returns is ended, so no
// keystroke meant for what comes next is swallowed.
func Session(ctx context.Context, in, out *os.File, run func(context.Context, sdk.TTY) (sdk.ExecResult, error)) (sdk.ExecResult, error) {
	tty := sdk.TTY{Output: out}
	fd := int(in.Fd())
	if term.IsTerminal(fd) {
		state, err := term.MakeRaw(fd)
		if err != nil {
			return sdk.ExecResult{}, fmt.Errorf("terminal: raw mode: %w", err)
		}
		defer func() { _ = term.Restore(fd, state) }()
		tty.Size = size(fd)
		// Signals arriving while a size waits to be taken coalesce in
		// winch; the size read after them is the newest.
		resize := make(chan sdk.WindowSize)
		winch := make(chan os.Signal, 1)
		signal.Notify(winch, syscall.SIGWINCH)
		done := make(chan struct{})
		defer func() {
			signal.Stop(winch)
			close(done)
		}()
		go func() {
			for {
				select {
				case <-winch:
					select {
					case resize <- size(fd):
					case <-done:
						return
					}
				case <-done:
					return
				}
			}
		}()
		tty.Resize = resize
	}
	stdin, stop, err := interruptible(in)
	if err != nil {
		return sdk.ExecResult{}, fmt.Errorf("terminal: %w", err)
	}
	defer stop()
	tty.Stdin = stdin
	return run(ctx, tty)
}

func size(fd int) sdk.WindowSize {
	cols, rows, err := term.GetSize(fd)
	if err != nil {
		return sdk.WindowSize{}
	}
	return sdk.WindowSize{Rows: uint16(rows), Cols: uint16(cols)}
}

// interruptible returns a reader of in whose pending Read stop ends. It
// reads a duplicate of in's descriptor in non-blocking mode through Go's
// poller; stop puts the descriptor back in blocking mode, as the shell
// that started sanddune expects it (only a SIGKILL leaves it otherwise).
func interruptible(in *os.File) (*os.File, func(), error) {
	fd := int(in.Fd())
	dup, err := syscall.Dup(fd)
	if err != nil {
		return nil, nil, err
	}
	// The flag belongs to the open file, which in and dup share.
	if err := syscall.SetNonblock(dup, true); err != nil {
		_ = syscall.Close(dup)
		return nil, nil, err
	}
	f := os.NewFile(uintptr(dup), in.Name())
	stop := func() {
		_ = f.Close() // ends a pending Read: f is in the poller
		_ = syscall.SetNonblock(fd, false)
	}
	return f, stop, nil
}
