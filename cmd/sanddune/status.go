package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/missingstudio/sanddune/cmd/sanddune/internal/live"
	"github.com/missingstudio/sanddune/core"
)

func newStatusCommand() *cobra.Command {
	var asJSON bool
	var repo string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "List the runs in progress in this repository",
		Long: `List the runs in progress in this repository, of every sanddune process working in it:
run, pid, phase, iteration, elapsed time, tokens of the finished iterations, branch and log. Each
running sanddune keeps a small state file per run in .sanddune/runs, replaced at each phase and
removed when the run ends; a file whose process is gone (killed) is ignored.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if repo == "" {
				repo, _ = os.Getwd()
			}
			states, _, err := core.RunsInProgress(cmd.Context(), repo)
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			if asJSON {
				if states == nil {
					states = []core.RunState{}
				}
				return writeJSON(cmd.OutOrStdout(), struct {
					Runs []core.RunState `json:"runs"`
				}{states})
			}
			printStatus(cmd.OutOrStdout(), states, time.Now())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"runs":[...]}, one object per run in progress`)
	cmd.Flags().StringVar(&repo, "repo", "", "the repository (default: the one holding the working directory)")
	return cmd
}

// printStatus prints the runs in progress as a table, at now.
func printStatus(w io.Writer, states []core.RunState, now time.Time) {
	if len(states) == 0 {
		fmt.Fprintln(w, "no runs in progress")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tPID\tPHASE\tITERATION\tELAPSED\tTOKENS\tBRANCH\tLOG")
	for _, s := range states {
		iter := "-"
		if s.Iteration > 0 {
			iter = fmt.Sprintf("%d/%d", s.Iteration, s.MaxIterations)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Run, s.PID, s.Phase, iter,
			live.Elapsed(now.Sub(s.Started)), live.Tokens(s.Tokens), orDash(s.Branch), orDash(s.Log))
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
