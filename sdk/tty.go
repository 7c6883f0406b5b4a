package sdk

import (
	"context"
	"io"
)

// WindowSize is a terminal's size in character cells.
type WindowSize struct {
	Rows, Cols uint16
}

// TTY connects a command on a pseudo-terminal to the user's terminal.
type TTY struct {
	// Size is the terminal's size when the command starts.
	Size WindowSize
	// Stdin carries what the user types, raw. ExecTTY may return while a
	// Read is still pending: whoever owns Stdin ends it.
	Stdin io.Reader
	// Output receives everything the command writes to the terminal
	// (stdout and stderr are one stream on a terminal), in order.
	Output io.Writer
	// Resize delivers later size changes; nil when there are none.
	Resize <-chan WindowSize
}

// TTYSandbox is implemented by the sandboxes of providers that declare the
// TTY capability: it runs the agent's interactive session (its TUI).
type TTYSandbox interface {
	// ExecTTY runs a command on a new pseudo-terminal of tty.Size, in its
	// own session with the terminal as its controlling terminal, and
	// returns how it ended once it exited and its output reached
	// tty.Output. req is as for Exec, except that req.Stdin must be nil:
	// input comes from tty.Stdin. A non-zero exit is not an error;
	// cancelling ctx kills the command.
	ExecTTY(ctx context.Context, req ExecRequest, tty TTY) (ExecResult, error)
}
