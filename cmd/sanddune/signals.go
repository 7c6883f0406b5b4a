package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// interruptSignals end a run cleanly: Ctrl-C, kill's default, and the
// terminal closing.
var interruptSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// interruptible returns a context cancelled by the first interrupt signal:
// runs then kill their agents, sync their work out and remove their
// sandboxes. A second signal does not abandon that teardown (a sync out
// cut short leaves commits in the sandbox): it says so, and a third exits
// 130 at once, leaving the rest to `sanddune gc`. interrupted reports
// whether a signal came; stop ends the handling.
func interruptible(parent context.Context, stderr io.Writer) (ctx context.Context, interrupted func() bool, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, interruptSignals...)
	done := make(chan struct{})
	var count atomic.Int32
	go func() {
		for {
			select {
			case <-done:
				return
			case sig := <-ch:
				switch count.Add(1) {
				case 1:
					cancel()
				case 2:
					fmt.Fprintf(stderr, "\nsanddune: %v: finishing the teardown (syncing work out of the sandbox, removing it); "+
						"press Ctrl-C again to abandon it (work not synced out stays in the sandbox: `sanddune gc` salvages it)\n", sig)
				default:
					fmt.Fprintf(stderr, "\nsanddune: %v: abandoned; run `sanddune gc` to salvage and remove what is left\n", sig)
					os.Exit(exitCancelled)
				}
			}
		}
	}()
	return ctx, func() bool { return count.Load() > 0 }, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}
