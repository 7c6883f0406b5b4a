package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/missingstudio/sanddune/cmd/sanddune/internal/interrupts"
)

// interruptible returns a context cancelled by the first interrupt signal
// (Ctrl-C, kill's default, the terminal closing; caught since the process
// started, see package interrupts): runs then kill their agents, sync
// their work out and remove their sandboxes. A second signal does not
// abandon that teardown (a sync out cut short leaves commits in the
// sandbox): it says so, and a third exits 130 at once, leaving the rest to
// `sanddune gc`. The first signal is answered with note's line, if any
// (commands that run agents say their work is being saved). interrupted
// reports whether a signal came; stop ends the handling.
func interruptible(parent context.Context, stderr io.Writer, note func() string) (ctx context.Context, interrupted func() bool, stop func()) {
	ctx, cancel := context.WithCancel(parent)
	ch := interrupts.Caught()
	var count atomic.Int32
	// A signal that came before this point cancels before anything runs.
	select {
	case <-ch:
		count.Add(1)
		cancel()
	default:
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case sig := <-ch:
				switch count.Add(1) {
				case 1:
					if n := note(); n != "" {
						fmt.Fprintf(stderr, "\nsanddune: %v: %s\n", sig, n)
					}
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
		interrupts.Stop()
		close(done)
		cancel()
	}
}
