// Package interrupts catches the signals that end a run (Ctrl-C, kill's
// default, the terminal closing) from the start of the process. Its init
// runs as soon as os/signal is initialised, before the go-plugin, gRPC and
// HCL packages initialise (hundreds of milliseconds on a loaded machine), so
// a signal at any moment after that is a cancellation rather than the
// runtime's default exit (143, 129).
package interrupts

import (
	"os"
	"os/signal"
	"syscall"
)

// signals are the signals caught.
var signals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// caught receives them from init on; it holds a few, so none is lost
// before the command reads it.
var caught = make(chan os.Signal, 4)

// pipe receives SIGPIPE and is never read: being notified, a write to a
// closed stdout or stderr (`sanddune run | head -1`) fails with EPIPE
// instead of killing the process without its teardown, so the runs go on
// and end as usual. (Ignoring SIGPIPE instead would pass SIG_IGN on to
// agents and hooks.)
var pipe = make(chan os.Signal, 1)

func init() {
	signal.Notify(caught, signals...)
	signal.Notify(pipe, syscall.SIGPIPE)
}

// Caught returns the channel the signals arrive on.
func Caught() <-chan os.Signal { return caught }

// Stop ends the catching.
func Stop() { signal.Stop(caught) }
