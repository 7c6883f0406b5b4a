package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/runlog"
	"github.com/missingstudio/sanddune/core/terminal"
	"github.com/missingstudio/sanddune/sdk"
)

func newInteractiveCommand(g *globals) *cobra.Command {
	f := &configFlags{}
	cmd := &cobra.Command{
		Use:   "interactive [RUN]",
		Short: "Open the agent's TUI in a run's sandbox and worktree; its commits land like a run's",
		Long: `Prepare the run like "sanddune run" does (worktree, hooks, sandbox), then attach your
terminal to the agent's interactive TUI. When the TUI exits, the commits on the run's branch
are reported (and merged for merge-to-head) like a run's. RUN may be left out when the config
has one run block.

sandbox = "none" runs the TUI on this machine, in the worktree, as you: no boundary, so the agent
keeps its permission prompts. A {{KEY}} of the prompt file without a value is asked for here.

Exit codes: 0 the TUI exited with 0, 1 it failed, 2 config or usage error, 130 cancelled.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.stopNote.Store(savingNote)
			return runInteractive(cmd, g, f, args)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&f.repo, "repo", "", "host git repository (default: the repo containing the working directory); overrides the run's repo")
	return cmd
}

func runInteractive(cmd *cobra.Command, g *globals, f *configFlags, names []string) error {
	if !isatty.IsTerminal(os.Stdin.Fd()) {
		return &exitError{code: exitUsage, err: errors.New("stdin is not a terminal: sanddune interactive attaches your terminal to the agent's TUI, so run it from one (for unattended work, use sanddune run)")}
	}
	// Keys typed in the TUI go to the agent (raw mode); a signal from
	// outside ends the session and keeps the work.
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Progress would garble the TUI: it goes to the run's log file.
	base := core.RunOptions{Repo: f.repo, Logging: core.Logging{Mode: core.LogFile, Terminal: runlog.Stdio()}, Version: sandduneVersion(), Logger: g.logger()}
	if base.Repo != "" {
		base.Repo, _ = filepath.Abs(base.Repo)
	}
	att := &core.Attachment{
		Ask:  terminal.Ask(os.Stdin, os.Stderr),
		Term: os.Getenv("TERM"),
		Attach: func(ctx context.Context, sb sdk.TTYSandbox, req sdk.ExecRequest) (sdk.ExecResult, error) {
			return terminal.Session(ctx, os.Stdin, os.Stdout, func(ctx context.Context, tty sdk.TTY) (sdk.ExecResult, error) {
				return sb.ExecTTY(ctx, req, tty)
			})
		},
	}
	p, err := planConfig(ctx, g, f, core.Selection{Runs: names, Interactive: att}, base, 1)
	if err != nil {
		return err
	}
	defer stopPlugins(ctx, p.host, os.Stderr)
	outs := core.Execute(ctx, p.plan)
	printSummary(base.Logging.Terminal, outs)
	return worstExit(outs)
}
