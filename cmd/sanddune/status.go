package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

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
			elapsed(now.Sub(s.Started)), tokenCount(s.Tokens), orDash(s.Branch), orDash(s.Log))
	}
	tw.Flush()
}

// elapsed is a duration as 42s, 3m05s or 1h02m.
func elapsed(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// tokenCount is a token count as 950, 12.3k or 2.1M; "-" for none.
func tokenCount(n int64) string {
	switch {
	case n <= 0:
		return "-"
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
