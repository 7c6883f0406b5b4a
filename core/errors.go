package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// Phase names the step of a run an error comes from.
type Phase string

const (
	PhaseConfig    Phase = "config"    // options, prompt, env, strategy: before anything starts
	PhasePreflight Phase = "preflight" // the sandbox provider's checks
	PhaseWorktree  Phase = "worktree"  // locks, worktree and branch creation
	PhaseCopy      Phase = "copy"      // copy_to_worktree
	PhaseHooks     Phase = "hooks"
	PhaseSandbox   Phase = "sandbox" // sandbox creation
	PhaseSyncIn    Phase = "sync-in"
	PhasePrompt    Phase = "prompt" // shell expressions
	PhaseSession   Phase = "session"
	PhaseAgent     Phase = "agent"
	PhaseSyncOut   Phase = "sync-out"
	PhaseMerge     Phase = "merge"
	PhaseCleanup   Phase = "cleanup"
)

// RunError is a failed run. Its message names the run, the phase and the
// plugin involved, where the work is, and what to do next.
type RunError struct {
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
	Commits           []Commit
	PreservedWorktree string
	PatchPath         string
	LogFile           string
	// Hint is the next step for the user.
	Hint string
}

func (e *RunError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "run %q", e.Run)
	switch {
	case e.Cancelled:
		fmt.Fprintf(&b, " cancelled during %s", e.Phase)
	case e.Phase == PhaseConfig:
		b.WriteString(": configuration")
	default:
		fmt.Fprintf(&b, ": %s failed", e.Phase)
	}
	if e.Iteration > 0 {
		fmt.Fprintf(&b, " (iteration %d)", e.Iteration)
	}
	if e.Plugin != "" {
		fmt.Fprintf(&b, " [%s]", e.Plugin)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
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

func (e *RunError) Unwrap() error { return e.Err }

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
		msg += ":\n" + indent(d)
	}
	return msg
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

// Exit codes for the CLI.
const (
	ExitOK        = 0
	ExitFailure   = 1
	ExitConfig    = 2
	ExitCancelled = 130
)

// ExitCode classifies an error from Run: 0 for nil, 130 when cancelled, 2
// for configuration and usage errors, 1 for any other failure.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var re *RunError
	if errors.As(err, &re) {
		switch {
		case re.Cancelled:
			return ExitCancelled
		case re.Phase == PhaseConfig:
			return ExitConfig
		}
		return ExitFailure
	}
	var diags sdk.Diagnostics
	var plan *worktree.PlanError
	switch {
	case errors.Is(err, context.Canceled):
		return ExitCancelled
	case errors.As(err, &diags), errors.As(err, &plan):
		return ExitConfig
	}
	return ExitFailure
}
