package core

import (
	"github.com/missingstudio/sanddune/core/internal/agentexec"
	"github.com/missingstudio/sanddune/core/internal/execute"
	"github.com/missingstudio/sanddune/core/output"
	"github.com/missingstudio/sanddune/core/worktree"
)

// Result is what a run produced. Its JSON form is one entry of the
// `sanddune run --json` document; absent values are null.
type Result = execute.Result

// ResumeOptions say which agent session a run continues.
type ResumeOptions = execute.ResumeOptions

// Iteration is one agent invocation.
type Iteration = execute.Iteration

// Commit is one commit of a run.
type Commit = worktree.Commit

// Output limits: MaxStdoutBytes bounds Result.Stdout; MaxAgentLine caps
// one agent output line handed to the agent's parser (the rest of a longer
// line is dropped, with a warning).
const (
	MaxStdoutBytes = execute.MaxStdoutBytes
	MaxAgentLine   = agentexec.MaxAgentLine
)

// RunError is a failed run. Its message names the run, the phase and the
// plugin involved, where the work is, and what to do next.
type RunError = execute.RunError

// Phase names the step of a run an error comes from.
type Phase = execute.Phase

// The phases of a run.
const (
	PhaseConfig    = execute.PhaseConfig
	PhasePlan      = execute.PhasePlan
	PhasePreflight = execute.PhasePreflight
	PhaseWorktree  = execute.PhaseWorktree
	PhaseCopy      = execute.PhaseCopy
	PhaseHooks     = execute.PhaseHooks
	PhaseSandbox   = execute.PhaseSandbox
	PhaseSyncIn    = execute.PhaseSyncIn
	PhasePrompt    = execute.PhasePrompt
	PhaseSession   = execute.PhaseSession
	PhaseAgent     = execute.PhaseAgent
	PhaseOutput    = execute.PhaseOutput
	PhaseSyncOut   = execute.PhaseSyncOut
	PhaseMerge     = execute.PhaseMerge
	PhaseCleanup   = execute.PhaseCleanup
)

// IdleTimeoutError is an agent that printed nothing for its idle timeout.
type IdleTimeoutError = agentexec.IdleTimeoutError

// AgentExitError is an agent process that exited non-zero.
type AgentExitError = agentexec.ExitError

// StructuredOutputError is a run whose structured output (RunOptions.Output)
// is missing, not JSON, or does not match its schema: the tag, the raw
// match, the cause (instance path and message), where the work is, and the
// agent session to resume (RunOptions.ResumeSession = SessionID) with a
// prompt asking for corrected output. The run's *RunError wraps it
// (errors.As finds it).
type StructuredOutputError = execute.OutputError

// OutputCause says why structured output was refused: the JSON Pointer of
// the offending value and the message.
type OutputCause = output.Cause
