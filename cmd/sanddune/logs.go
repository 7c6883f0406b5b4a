package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/worktree"
)

// followPoll is how often `logs -f` looks for more of the log, and
// whether the run still lives.
const followPoll = 200 * time.Millisecond

func newLogsCommand() *cobra.Command {
	var follow bool
	var repo string
	cmd := &cobra.Command{
		Use:   "logs RUN [LOG]",
		Short: "Print a run's latest log, or follow it while the run lives",
		Long: `Print the log of RUN (a run's name, as "sanddune status" shows it): the log of its run in
progress, else its latest in .sanddune/logs; or LOG, a log file given. With -f, keep printing what
is appended while the run's process lives, and stop once it is gone.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if repo == "" {
				repo, _ = os.Getwd()
			}
			path, root, live, err := runLog(cmd.Context(), repo, args)
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			running := func() bool { return false }
			switch {
			case follow && live:
				running = func() bool { return inProgress(root, path) }
			case follow && len(args) == 1:
				fmt.Fprintf(cmd.ErrOrStderr(), "run %q is not in progress (a run waiting for another has not started), so there is nothing to follow; its latest log, %s:\n", args[0], path)
			}
			return printLog(cmd.Context(), cmd.OutOrStdout(), path, running)
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing the log while the run's process lives")
	cmd.Flags().StringVar(&repo, "repo", "", "the repository (default: the one holding the working directory)")
	return cmd
}

// runLog finds the log to print: args[1] when given, else the log of
// run args[0] in progress, else its latest log in .sanddune/logs; root is
// the repository's. live says the log is of a run in progress.
func runLog(ctx context.Context, dir string, args []string) (path, root string, live bool, err error) {
	name := args[0]
	states, root, err := core.RunsInProgress(ctx, dir)
	if err != nil {
		return "", "", false, err
	}
	for _, s := range states {
		if s.Run == name && s.Log != "" && (len(args) == 1 || sameFile(s.Log, args[1])) {
			path, live = s.Log, true
		}
	}
	switch {
	case path != "":
		return path, root, true, nil
	case len(args) == 2:
		return args[1], root, false, nil
	}
	logs, err := core.RunLogs(root, name)
	if err != nil {
		return "", "", false, err
	}
	if len(logs) == 0 {
		return "", "", false, fmt.Errorf("no log of run %q in %s (sanddune status lists the runs in progress)",
			name, filepath.Join(root, worktree.StateDirName, "logs"))
	}
	return logs[len(logs)-1], root, false, nil
}

// inProgress tells whether the run logging to path is still in progress:
// its state file in the repository at root is there and its process lives.
func inProgress(root, path string) bool {
	states, err := core.RunStates(root)
	if err != nil {
		return false
	}
	for _, s := range states {
		if s.Log == path {
			return true
		}
	}
	return false
}

func sameFile(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}

// printLog copies the log at path to w, then keeps copying what is
// appended while running says its run goes on (or until ctx ends), and
// copies what came last. The run removes its state file once its log is
// closed, so nothing is missed.
func printLog(ctx context.Context, w io.Writer, path string, running func() bool) error {
	f, err := os.Open(path)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	defer f.Close()
	for {
		if _, err := io.Copy(w, f); err != nil {
			return err
		}
		if !running() {
			_, err := io.Copy(w, f) // what it wrote before it went
			return err
		}
		select {
		case <-ctx.Done(): // Ctrl-C ends following
			return nil
		case <-time.After(followPoll):
		}
	}
}
