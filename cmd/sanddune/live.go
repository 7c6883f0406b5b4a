package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"text/tabwriter"

	"github.com/mattn/go-isatty"

	"github.com/missingstudio/sanddune/cmd/sanddune/internal/live"
	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/runlog"
)

// liveOutput is `run`'s live view (package live) while the runs go, when
// stdout is a terminal and the runs log to files: the runs' terminal
// lines (warnings, waits) and the interrupt notes are printed above it,
// and the summary replaces it at the end.
type liveOutput struct {
	mu       sync.Mutex
	view     *live.View // while the runs go
	out, err syncWriter
	g        *globals
	stop     func() bool
}

// newLiveOutput is the live view of a run command, or nil when it is off:
// stdout is not a terminal (or a dumb one), --json, --dry-run or --log
// stdout. It sets the runs' terminal and observers in base.
func newLiveOutput(g *globals, f *runFlags, base *core.RunOptions) *liveOutput {
	if f.json || f.dryRun || f.log == string(core.LogStdout) || !isatty.IsTerminal(os.Stdout.Fd()) || os.Getenv("TERM") == "dumb" {
		return nil
	}
	lo := &liveOutput{g: g}
	lo.out.set(os.Stdout)
	lo.err.set(os.Stderr)
	base.Logging.Terminal = runlog.NewTerminal(&lo.out, &lo.err).WithoutLogHint()
	onEvent, onProgress, onPhase := base.OnEvent, base.OnSandboxProgress, base.OnPhase
	base.OnEvent = func(e core.AgentEvent) {
		if onEvent != nil {
			onEvent(e)
		}
		if v := lo.current(); v != nil {
			v.Event(e)
		}
	}
	base.OnSandboxProgress = func(p core.SandboxProgress) {
		if onProgress != nil {
			onProgress(p)
		}
		if v := lo.current(); v != nil {
			v.Progress(p)
		}
	}
	base.OnPhase = func(e core.PhaseEvent) {
		if onPhase != nil {
			onPhase(e)
		}
		if v := lo.current(); v != nil {
			v.Phase(e)
		}
	}
	return lo
}

// start shows the plan's runs until close; an interrupt shows them
// stopping.
func (lo *liveOutput) start(ctx context.Context, p *core.RunPlan) {
	var runs []live.Run
	for _, r := range p.Runs {
		runs = append(runs, *r)
	}
	v := live.Start(os.Stdout, runs)
	lo.out.set(v.Writer(os.Stdout))
	lo.err.set(v.Writer(os.Stderr))
	lo.g.notes.set(v.Writer(os.Stderr))
	lo.g.stopNote.Store("") // the view says it
	lo.stop = context.AfterFunc(ctx, v.Stopping)
	lo.mu.Lock()
	lo.view = v
	lo.mu.Unlock()
}

func (lo *liveOutput) current() *live.View {
	lo.mu.Lock()
	defer lo.mu.Unlock()
	return lo.view
}

// close erases the view; the terminal is the runs' again.
func (lo *liveOutput) close() {
	v := lo.current()
	if v == nil {
		return
	}
	lo.stop()
	lo.mu.Lock()
	lo.view = nil
	lo.mu.Unlock()
	v.Close()
	lo.out.set(os.Stdout)
	lo.err.set(os.Stderr)
	lo.g.notes.set(os.Stderr)
}

// printTable prints the runs' outcomes as a table on w, then on term what
// needs reading in full: errors (stderr), skipped runs, kept work.
func printTable(w io.Writer, term *runlog.Terminal, outs []core.Outcome) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATUS\tITERATIONS\tCOMMITS\tBRANCH\tTOKENS\tTIME")
	row := func(name, status string, r *core.Result) {
		if r == nil {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\n", name, status)
			return
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", name, status, len(r.Iterations), len(r.Commits), orDash(r.Branch),
			live.Tokens(core.Tokens(r.Usage())), live.Elapsed(r.Elapsed))
	}
	for _, o := range outs {
		row(o.Name, outcomeStatus(o), o.Result)
		if o.Result != nil {
			for _, st := range o.Result.Steps {
				row("  "+st.Name, outcomeStatus(st), st.Result)
			}
		}
	}
	tw.Flush()
	for _, o := range outs {
		switch r := o.Result; {
		case o.Skipped != "":
			term.Println(fmt.Sprintf("- %s: skipped: %s", o.Name, o.Skipped))
		case o.Err != nil:
			term.Eprintln(fmt.Sprintf("✗ %s: %v", o.Name, o.Err))
		case r.PreservedWorktreePath != "":
			term.Println(fmt.Sprintf("%s: uncommitted work kept in %s", o.Name, r.PreservedWorktreePath))
		case r.PatchPath != "":
			term.Println(fmt.Sprintf("%s: uncommitted sandbox work saved to %s", o.Name, r.PatchPath))
		}
		if r := o.Result; r != nil && r.EgressDenied > 0 {
			term.Println(fmt.Sprintf("%s: %s", o.Name, r.EgressNote()))
		}
	}
}

// outcomeStatus is an outcome's STATUS cell.
func outcomeStatus(o core.Outcome) string {
	var re *core.RunError
	switch {
	case o.Skipped != "":
		return "- skipped"
	case errors.As(o.Err, &re) && re.Cancelled:
		return "✗ cancelled"
	case o.Err != nil:
		return "✗ failed"
	case o.Result.CompletionSignal == "":
		return "✓ done (no signal)"
	}
	return "✓ done"
}
