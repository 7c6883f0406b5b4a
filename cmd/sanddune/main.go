// Command sanddune turns a prompt, a coding agent and a sandbox into
// commits on a git branch. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/missingstudio/sanddune/core"
)

// Exit codes.
const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2
	exitCancelled = 130
)

// exitCode classifies a run's error: 0 for nil, 130 when cancelled, 2 for
// configuration errors, 1 for any other failure.
func exitCode(err error) int {
	var re *core.RunError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &re) && re.Cancelled, errors.Is(err, context.Canceled):
		return exitCancelled
	case errors.As(err, &re) && re.Phase == core.PhaseConfig:
		return exitUsage
	}
	return exitFailure
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	if filepath.Base(os.Args[0]) == builtinsBinary {
		// Started by a plugin host as its built-ins' plugin (ADR 0030).
		serveBuiltins()
		return
	}
	root, g := newRootCommand()
	ctx, interrupted, stop := interruptible(context.Background(), &g.notes, func() string { return g.stopNote.Load() })
	closeHost := addPluginCommands(ctx, root, g, os.Args[1:])
	cmd, err := root.ExecuteContextC(ctx)
	closeHost()
	stop()
	if err == nil && interrupted() {
		// The signal came when the work was done or being saved: said above.
		fmt.Fprintln(os.Stderr, "sanddune: stopped by a signal; the work is saved")
		os.Exit(exitCancelled)
	}
	if err == nil {
		os.Exit(exitOK)
	}
	var ee *exitError
	if interrupted() && !(errors.As(err, &ee) && ee.code == exitCancelled) {
		// Whatever failed, failed because it was cut short.
		fmt.Fprintln(os.Stderr, "Error: cancelled")
		os.Exit(exitCancelled)
	}
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintln(os.Stderr, "Error:", ee.err)
		}
		os.Exit(ee.code)
	}
	// cobra's own errors: unknown command or flag, wrong arguments; the
	// help of the command they were given to lists what it takes.
	fmt.Fprintln(os.Stderr, "Error:", err)
	help := "sanddune"
	if cmd != nil {
		help = cmd.CommandPath()
	}
	fmt.Fprintf(os.Stderr, "Run '%s --help' for usage.\n", help)
	os.Exit(exitUsage)
}
