package core

import (
	"context"

	"github.com/missingstudio/sanddune/core/internal/execute"
	"github.com/missingstudio/sanddune/core/internal/planning"

	"github.com/missingstudio/sanddune/sdk"
)

// Attachment connects interactive sessions to the user's terminal.
type Attachment struct {
	// Attach runs the session: it calls sb.ExecTTY(ctx, req, tty) with the
	// user's terminal as tty (see terminal.Session) and returns its result.
	Attach func(ctx context.Context, sb sdk.TTYSandbox, req sdk.ExecRequest) (sdk.ExecResult, error)
	// Ask supplies prompt arguments that PromptArgs lacks (terminal.Ask);
	// nil leaves them an error.
	Ask func(key string) (string, error)
	// Term is the user's TERM, passed to the session.
	Term string
}

// InteractiveOptions is an interactive session: the agent's TUI in the
// run's sandbox and worktree (or on the host with NoSandbox), prepared and
// cleaned up like a run, with the user at the terminal.
type InteractiveOptions struct {
	RunOptions
	Attachment
}

// Interactive runs one interactive session: the same plan and setup as
// Run, the agent's interactive command attached to the user's terminal
// instead of the iterations, then the same teardown, which reports the
// commits on the branch (and merges them for merge-to-head). The agent
// gets its permission bypass only inside a confining sandbox. A non-zero
// exit of the agent is a *RunError whose Err is an *AgentExitError; the
// commits are reported all the same.
func Interactive(ctx context.Context, o InteractiveOptions) (*Result, error) {
	if o.Attach == nil {
		return nil, errNoAttach(o.Name)
	}
	p, err := planRun(ctx, o.RunOptions, &o.Attachment)
	if err != nil {
		return nil, err
	}
	out := Execute(ctx, p)[0]
	return out.Result, out.Err
}

func errNoAttach(run string) error {
	return &RunError{Run: run, Phase: PhaseConfig, Err: Diagnostics{{Severity: Error, Block: "run." + run, Summary: "InteractiveOptions.Attach is not set"}}}
}

// options is o as the planner takes it: an interactive session on a's
// terminal, unattended when a is nil.
func (a *Attachment) options(o RunOptions) planning.Options {
	po := planning.Options{Options: o}
	if a != nil {
		po.Interactive, po.Ask = &execute.Interactive{Attach: a.Attach, Term: a.Term}, a.Ask
	}
	return po
}
