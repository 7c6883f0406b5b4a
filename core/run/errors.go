package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/missingstudio/sanddune/core/output"
	"github.com/missingstudio/sanddune/core/worktree"
)

// Phase names the step of a run an error comes from, or that a run has
// entered (PhaseEvent).
type Phase string

const (
	PhaseConfig    Phase = "config"    // the plan: options, prompt, env, strategy, before anything starts
	PhasePlan      Phase = "plan"      // a run planned at run time, from the results of the runs it needs
	PhasePreflight Phase = "preflight" // the sandbox provider's checks
	PhaseWorktree  Phase = "worktree"  // locks, worktree and branch creation
	PhaseCopy      Phase = "copy"      // copy_to_worktree
	PhaseHooks     Phase = "hooks"
	PhaseSandbox   Phase = "sandbox" // sandbox creation
	PhaseSyncIn    Phase = "sync-in"
	PhasePrompt    Phase = "prompt" // shell expressions
	PhaseSession   Phase = "session"
	PhaseAgent     Phase = "agent"
	PhaseOutput    Phase = "output" // structured output: extraction and schema
	PhaseBudget    Phase = "budget" // the token budget was spent: the run stopped (a BudgetError)
	PhaseSyncOut   Phase = "sync-out"
	PhaseMerge     Phase = "merge"
	PhaseCleanup   Phase = "cleanup"

	// Phases of progress only (PhaseEvent), never of an error: a run
	// waiting for its place (Parallel, a pipeline's max_parallel), and a
	// run that ended.
	PhaseWaiting Phase = "waiting"
	PhaseDone    Phase = "done"
)

// Error is a failed run. Its message names the run, the phase and the
// plugin involved, where the work is, and what to do next.
type Error struct {
	Run   string
	Phase Phase
	// Plugin is the provider block involved, e.g. "agent.claude.opus".
	Plugin    string
	Iteration int // 0 outside the iteration loop
	Err       error
	// Cancelled says the run's context was cancelled; Err is its cause.
	Cancelled bool
	// Where the work is: the branch holding the run's commits (kept on
	// failure), the commits, a preserved worktree, a patch of uncommitted
	// sandbox work, the log.
	Branch            string
	Commits           []worktree.Commit
	PreservedWorktree string
	PatchPath         string
	LogFile           string
	// Hint is the next step for the user.
	Hint string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %q", e.Run)
	switch {
	case e.Cancelled:
		fmt.Fprintf(&b, " cancelled during %s", e.Phase)
	case e.Phase == PhaseConfig:
		b.WriteString(": configuration")
	case e.Phase == PhaseBudget:
		b.WriteString(" stopped")
	default:
		fmt.Fprintf(&b, ": %s failed", e.Phase)
	}
	if e.Iteration > 0 && e.Phase != PhaseBudget { // its message says when
		fmt.Fprintf(&b, " (iteration %d)", e.Iteration)
	}
	if e.Plugin != "" {
		fmt.Fprintf(&b, " [%s]", e.Plugin)
	}
	if !e.Cancelled || !errors.Is(e.Err, context.Canceled) { // "cancelled" said it
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if len(e.Commits) > 0 && e.Branch != "" {
		fmt.Fprintf(&b, "\n  %d commit(s) kept on branch %s", len(e.Commits), e.Branch)
	}
	if e.PreservedWorktree != "" {
		fmt.Fprintf(&b, "\n  worktree preserved at %s (cd there to inspect; git worktree remove --force %s to discard)", e.PreservedWorktree, e.PreservedWorktree)
	}
	if e.PatchPath != "" {
		fmt.Fprintf(&b, "\n  uncommitted sandbox work saved to %s (git apply %s)", e.PatchPath, e.PatchPath)
	}
	if e.LogFile != "" {
		fmt.Fprintf(&b, "\n  log: %s", e.LogFile)
	}
	hint := e.Hint
	if e.Cancelled && hint == "" {
		hint = "nothing was lost (see above); run again to continue"
	}
	if hint != "" {
		fmt.Fprintf(&b, "\n  next: %s", hint)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// OutputError is a run whose structured output is missing, not JSON, or
// does not match its schema (the Error of PhaseOutput wraps it). The
// agent session that wrote it can be resumed (resume_session = SessionID)
// to ask for corrected output.
type OutputError struct {
	Tag string
	// Raw is the last <tag>…</tag> content ("" when there was none).
	Raw   string
	Cause output.Cause
	// Where the work is, as in Error.
	Branch            string
	Commits           []worktree.Commit
	PreservedWorktree string
	// SessionID and SessionFile are the agent session of the run's last
	// iteration ("" when the agent reported none or it was not captured).
	SessionID   string
	SessionFile string
}

func (e *OutputError) Error() string {
	msg := (&output.Error{Tag: e.Tag, Raw: e.Raw, Cause: e.Cause}).Error()
	if e.Raw != "" {
		msg += fmt.Sprintf("\n  raw <%s> content: %s", e.Tag, excerpt(e.Raw, 400))
	}
	if e.SessionID != "" {
		msg += "\n  agent session: " + e.SessionID
		if e.SessionFile != "" {
			msg += " (" + e.SessionFile + ")"
		}
	}
	return msg
}

func excerpt(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// IdleTimeoutError is an agent that printed nothing for Timeout.
type IdleTimeoutError struct{ Timeout time.Duration }

func (e *IdleTimeoutError) Error() string {
	return fmt.Sprintf("agent idle for %s: no output received; the agent process was stopped", e.Timeout)
}

// AgentExitError is an agent process that exited non-zero.
type AgentExitError struct {
	ExitCode int
	// Detail is what the agent said: its error events, else the tail of
	// its stderr, else of its stdout.
	Detail string
}

func (e *AgentExitError) Error() string {
	msg := fmt.Sprintf("agent exited with code %d", e.ExitCode)
	if d := strings.TrimSpace(e.Detail); d != "" {
		msg += ":\n    " + strings.ReplaceAll(d, "\n", "\n    ")
	}
	return msg
}
