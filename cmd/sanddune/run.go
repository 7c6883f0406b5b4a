package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/runlog"
)

type runFlags struct {
	configFlags
	json     bool
	log      string
	events   string
	parallel int
	dryRun   bool
}

func newRunCommand(g *globals) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run [RUN...]",
		Short: "Run agents: the named runs, or every run in the config in file order",
		Long: `Run the named runs, sessions and pipelines (default: every run, then every session, in
file order). Each run prepares its branch (a worktree of its own, or your checkout with the
"head" strategy, the default of bind-mount sandboxes) and a sandbox, renders the prompt, and runs
the agent until it prints a completion signal or reaches max_iterations; its commits land on a
branch.

Exit codes: 0 success, 1 a run failed, 2 config or usage error, 130 cancelled (SIGINT/SIGTERM/SIGHUP;
a second Ctrl-C does not abandon the teardown, a third does).
On failure or cancellation nothing is lost: the error says which branch holds the commits and
where uncommitted work is preserved.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			g.stopNote.Store(savingNote)
			return runRuns(cmd, g, f, args)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&f.json, "json", false, `print the results as JSON on stdout ({"runs":[...],"diagnostics":[...]}, also on a config error); progress goes to stderr`)
	cmd.Flags().StringVar(&f.log, "log", "", "where progress goes: file (default; .sanddune/logs) or stdout; overrides the runs' logging blocks")
	cmd.Flags().StringVar(&f.events, "events", "", "write every agent event as a JSON line to this file")
	cmd.Flags().StringVar(&f.configFlags.repo, "repo", "", "host git repository (default: the repo containing the working directory); overrides the runs' repo")
	cmd.Flags().IntVarP(&f.parallel, "parallel", "p", 0, "how many runs to run at once (default 1, or the largest max_parallel of the selected pipelines)")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "check the config and print the plan (what each run would do) without running anything; JSON with --json")
	return cmd
}

func runRuns(cmd *cobra.Command, g *globals, f *runFlags, names []string) error {
	if f.log != "" && f.log != string(core.LogFile) && f.log != string(core.LogStdout) {
		return &exitError{code: exitUsage, err: fmt.Errorf("--log %q: want file or stdout", f.log)}
	}
	if cmd.Flags().Changed("parallel") && f.parallel < 1 {
		return &exitError{code: exitUsage, err: fmt.Errorf("--parallel must be at least 1")}
	}
	// An interrupt (main's interruptible) cancels ctx: the runs kill their
	// agents, keep the work, and the command exits 130.
	ctx := cmd.Context()

	base := core.RunOptions{Repo: f.configFlags.repo, Logging: core.Logging{Mode: core.LogMode(f.log)}, Version: sandduneVersion(), Logger: g.logger()}
	if base.Repo != "" {
		base.Repo, _ = filepath.Abs(base.Repo)
	}
	base.Logging.Terminal = runlog.Stdio()
	if f.json {
		base.Logging.Terminal = runlog.NewTerminal(os.Stderr, os.Stderr)
	}
	if f.events != "" && !f.dryRun {
		ef, err := os.OpenFile(f.events, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600) // like the run logs: what the agent printed
		if err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("--events: %w", err)}
		}
		defer ef.Close()
		setEventSinks(&base, NewEventWriter(ef), f.events)
	}
	lo := newLiveOutput(g, f, &base)
	p, err := planConfig(ctx, g, &f.configFlags, core.Selection{Runs: names}, base, f.parallel)
	if err != nil {
		var ee *exitError
		if f.json && errors.As(err, &ee) && ee.code == exitUsage {
			printConfigErrorJSON(cmd.OutOrStdout(), err)
		}
		return err
	}
	defer stopPlugins(ctx, p.host, os.Stderr)
	if f.dryRun {
		return printPlan(cmd.OutOrStdout(), p, f.json)
	}

	if lo != nil {
		lo.start(ctx, p.plan)
	}
	outs := core.Execute(ctx, p.plan)
	switch {
	case f.json:
		printJSON(cmd, outs, p.diags)
	case lo != nil:
		lo.close()
		if len(outs) > 1 {
			printTable(os.Stdout, base.Logging.Terminal, outs)
		} else {
			printSummary(base.Logging.Terminal, outs)
		}
	default:
		printSummary(base.Logging.Terminal, outs)
	}
	return worstExit(outs)
}

func printJSON(cmd *cobra.Command, outs []core.Outcome, diags hcl.Diagnostics) {
	writeRunsJSON(cmd.OutOrStdout(), outs, diags)
	for _, o := range outs {
		if o.Err != nil {
			fmt.Fprintln(os.Stderr, "Error:", o.Err)
		}
	}
}

func printSummary(term *runlog.Terminal, outs []core.Outcome) {
	for _, o := range outs {
		r := o.Result
		if o.Skipped != "" {
			term.Eprintln(fmt.Sprintf("- %s: skipped: %s", o.Name, o.Skipped))
			continue
		}
		if o.Err != nil {
			term.Eprintln(fmt.Sprintf("✗ %s: %v", o.Name, o.Err))
			if r != nil && r.EgressDenied > 0 {
				term.Eprintln("  " + r.EgressNote())
			}
			continue
		}
		line := fmt.Sprintf("✓ %s: %d commit(s) on %s", r.Name, len(r.Commits), r.Branch)
		line += signalNote(r)
		if r.EgressDenied > 0 {
			line += "; " + r.EgressNote()
		}
		if r.PreservedWorktreePath != "" {
			line += "; uncommitted work kept in " + r.PreservedWorktreePath
		}
		if r.PatchPath != "" {
			line += "; uncommitted sandbox work saved to " + r.PatchPath
		}
		term.Println(line)
		for _, st := range r.Steps {
			if st.Err != nil {
				term.Println(fmt.Sprintf("  ✗ step %s failed", st.Name))
				continue
			}
			term.Println(fmt.Sprintf("  ✓ step %s: %d commit(s)%s", st.Name, len(st.Result.Commits), signalNote(st.Result)))
		}
	}
}

// signalNote says how a run that succeeded ended: with its completion
// signal, or after max_iterations without it (a success all the same).
func signalNote(r *core.Result) string {
	if r.CompletionSignal != "" {
		return ", completed with " + r.CompletionSignal
	}
	return fmt.Sprintf("; completion signal not seen after %d iteration(s)", len(r.Iterations))
}

// worstExit maps the runs' errors to the command's exit code: cancelled
// beats usage beats failure.
func worstExit(outs []core.Outcome) error {
	code := exitOK
	for _, o := range outs {
		if c := exitCode(o.Err); rank(c) > rank(code) {
			code = c
		}
	}
	if code == exitOK {
		return nil
	}
	// The errors were printed with the results.
	return &exitError{code: code, err: errors.New("")}
}

func rank(code int) int {
	switch code {
	case exitCancelled:
		return 3
	case exitUsage:
		return 2
	case exitFailure:
		return 1
	}
	return 0
}

// setEventSinks makes w write o's agent events, sandbox progress reports,
// phases and egress refusals. A failing --events file is warned about
// once, on stderr; the runs carry on without it (their results do not
// depend on it), so the exit code stays theirs.
func setEventSinks(o *core.RunOptions, w *EventWriter, path string) {
	var once sync.Once
	check := func() {
		if err := w.Err(); err != nil {
			once.Do(func() {
				fmt.Fprintf(os.Stderr, "warning: --events %s: %v; later events are dropped, the runs carry on\n", path, err)
			})
		}
	}
	o.OnEvent = func(e core.AgentEvent) { w.Write(e); check() }
	o.OnSandboxProgress = func(p core.SandboxProgress) { w.WriteSandboxProgress(p); check() }
	o.OnEgressDenied = func(d core.EgressDenied) { w.WriteEgressDenied(d); check() }
	o.OnPhase = func(e core.PhaseEvent) { w.WritePhase(e); check() }
}
