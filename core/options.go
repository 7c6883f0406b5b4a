package core

import (
	"github.com/missingstudio/sanddune/core/output"
	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/core/runlog"
	"github.com/missingstudio/sanddune/core/worktree"
)

// RunOptions is one run: a prompt, an agent and a sandbox turned into
// commits on a branch (run.Options has its fields). Plan builds it from a
// `run` block; library users build it directly (PlanRun, Run).
type RunOptions = run.Options

// SandboxRef is a configured sandbox provider block.
type SandboxRef = run.SandboxRef

// Egress is a sandbox's egress policy (SandboxRef.Egress).
type Egress = run.Egress

// AgentRef is a configured agent provider block.
type AgentRef = run.AgentRef

// Logging configures a run's log.
type Logging = run.Logging

// AgentEvent is an agent event as seen by observers (--events, OnEvent).
type AgentEvent = run.AgentEvent

// SandboxProgress is a sandbox provider's progress report as seen by
// observers (--events, OnSandboxProgress).
type SandboxProgress = run.SandboxProgress

// PhaseEvent is a run entering a phase as seen by observers (--events,
// OnPhase).
type PhaseEvent = run.PhaseEvent

// EgressDenied is a refusal of a sandbox's egress policy as seen by
// observers (--events, OnEgressDenied).
type EgressDenied = run.EgressDenied

// EgressCount is how often a run's egress policy refused one target
// (Result.EgressRefused).
type EgressCount = run.EgressCount

// BranchStrategy says where the agent's commits go. A zero Type means the
// provider's default (head for bind-mount, merge-to-head for isolated).
type BranchStrategy = worktree.Strategy

// StrategyType names a branch strategy.
type StrategyType = worktree.StrategyType

// The branch strategies.
const (
	StrategyHead        = worktree.StrategyHead
	StrategyMergeToHead = worktree.StrategyMergeToHead
	StrategyBranch      = worktree.StrategyBranch
)

// Timeouts bound a run's lifecycle steps.
type Timeouts = run.Timeouts

// DefaultTimeouts are the timeouts of a run that sets none: worktree 2m,
// create_sandbox 5m, hooks 60s (each), sync_in 5m, sync_out 5m, merge 2m,
// copy 10m.
var DefaultTimeouts = run.DefaultTimeouts

// OutputSpec asks a run for structured output: Tag, and Type
// (OutputString, or OutputJSON validated against Schema, a JSON Schema
// document).
type OutputSpec = output.Spec

// The structured output types.
const (
	OutputString = output.String
	OutputJSON   = output.JSON
)

// Hooks run around sandbox creation.
type Hooks = run.Hooks

// Hook is one shell command (shell by design); a zero Timeout is 60s.
type Hook = run.Hook

// LogMode is where progress goes.
type LogMode = runlog.Mode

// The log modes.
const (
	LogFile   = runlog.File   // default: .sanddune/logs/<run>-<ts>.log
	LogStdout = runlog.Stdout // live progress on the terminal
)

// Defaults of RunOptions.
const (
	DefaultMaxIterations     = run.DefaultMaxIterations     // 1
	DefaultCompletionSignal  = run.DefaultCompletionSignal  // "<promise>COMPLETE</promise>"
	DefaultIdleTimeout       = run.DefaultIdleTimeout       // 10m
	DefaultCompletionTimeout = run.DefaultCompletionTimeout // 60s
)
