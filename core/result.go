package core

import (
	"github.com/missingstudio/sanddune/core/output"
	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// Result is what a run produced. Its JSON form is one entry of the
// `sanddune run --json` document; absent values are null.
type Result = run.Result

// ResumeOptions say which agent session a run continues.
type ResumeOptions = run.ResumeOptions

// Iteration is one agent invocation.
type Iteration = run.Iteration

// Commit is one commit of a run.
type Commit = worktree.Commit

// Output limits: MaxStdoutBytes bounds Result.Stdout; MaxAgentLine caps
// one agent output line handed to the agent's parser (the rest of a longer
// line is dropped, with a warning).
const (
	MaxStdoutBytes = run.MaxStdoutBytes
	MaxAgentLine   = run.MaxAgentLine
)

// RunError is a failed run. Its message names the run, the phase and the
// plugin involved, where the work is, and what to do next.
type RunError = run.Error

// Phase names the step of a run an error comes from, or that a run has
// entered (PhaseEvent).
type Phase = run.Phase

// The phases of a run.
const (
	PhaseConfig    = run.PhaseConfig
	PhasePlan      = run.PhasePlan
	PhasePreflight = run.PhasePreflight
	PhaseWorktree  = run.PhaseWorktree
	PhaseCopy      = run.PhaseCopy
	PhaseHooks     = run.PhaseHooks
	PhaseSandbox   = run.PhaseSandbox
	PhaseSyncIn    = run.PhaseSyncIn
	PhasePrompt    = run.PhasePrompt
	PhaseSession   = run.PhaseSession
	PhaseAgent     = run.PhaseAgent
	PhaseOutput    = run.PhaseOutput
	PhaseBudget    = run.PhaseBudget
	PhaseSyncOut   = run.PhaseSyncOut
	PhaseMerge     = run.PhaseMerge
	PhaseCleanup   = run.PhaseCleanup
	PhaseWaiting   = run.PhaseWaiting
	PhaseDone      = run.PhaseDone
)

// IdleTimeoutError is an agent that printed nothing for its idle timeout.
type IdleTimeoutError = run.IdleTimeoutError

// AgentExitError is an agent process that exited non-zero.
type AgentExitError = run.AgentExitError

// BudgetError is a run its token budget (RunOptions.TokenBudget, or its
// pipeline's) stopped before its next iteration.
type BudgetError = run.BudgetError

// BudgetUsage is a token budget as a result reports it (Result.Budgets).
type BudgetUsage = run.BudgetUsage

// StructuredOutputError is a run whose structured output (RunOptions.Output)
// is missing, not JSON, or does not match its schema: the tag, the raw
// match, the cause (instance path and message), where the work is, and the
// agent session to resume (RunOptions.ResumeSession = SessionID) with a
// prompt asking for corrected output. The run's *RunError wraps it
// (errors.As finds it).
type StructuredOutputError = run.OutputError

// OutputCause says why structured output was refused: the JSON Pointer of
// the offending value and the message.
type OutputCause = output.Cause

// Tokens is every token of u: input, output, cache reads and cache
// writes; 0 for nil.
func Tokens(u *sdk.Usage) int64 { return run.Tokens(u) }
