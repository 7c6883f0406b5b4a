// Command sanddune turns a prompt, a coding agent and a sandbox into
// commits on a git branch. See README.md.
package main

import (
	"errors"
	"fmt"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// Exit codes.
const (
	exitOK        = 0
	exitFailure   = 1
	exitUsage     = 2
	exitCancelled = 130
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	if len(os.Args) > 2 && os.Args[1] == serveCommand {
		os.Exit(servePlugin(os.Args[2]))
	}
	root := newRootCommand()
	if len(os.Args) > 1 && os.Args[1] != "" && os.Args[1][0] != '-' {
		if c, _, err := root.Find(os.Args[1:]); err != nil || c == root {
			if code, ok := runPluginCommand(os.Args[1], os.Args[2:]); ok {
				os.Exit(code)
			}
		}
	}
	err := root.Execute()
	if err == nil {
		os.Exit(exitOK)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintln(os.Stderr, "Error:", ee.err)
		}
		os.Exit(ee.code)
	}
	// cobra's own errors: unknown command or flag.
	fmt.Fprintln(os.Stderr, "Error:", err)
	fmt.Fprintln(os.Stderr, "Run 'sanddune --help' for usage.")
	os.Exit(exitUsage)
}
