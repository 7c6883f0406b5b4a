package run

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/missingstudio/sanddune/core/output"
	"github.com/missingstudio/sanddune/core/runlog"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// Options is one run (core.RunOptions): a prompt, an agent and a sandbox
// turned into commits on a branch. core.Plan reads it from a `run` block
// (or a session's step); library users build it directly (core.PlanRun,
// core.Run). Zero values take the defaults. Relative paths resolve
// against BaseDir (the config file's directory, or the process working
// directory when empty), except CopyToWorktree, which resolves against
// the repo root.
type Options struct {
	// Name is the run's name: log prefix, worktree and temp-branch name.
	Name string
	// Repo is the host repository; empty means the git repo containing the
	// working directory.
	Repo    string
	BaseDir string

	Sandbox SandboxRef
	Agent   AgentRef
	// NoSandbox (sandbox = "none") runs an interactive session on the host,
	// in the worktree, as the user: not a boundary. Only Interactive
	// accepts it; Sandbox is then unused.
	NoSandbox bool
	// AllowUnconfined lets an unattended run of an agent that needs a
	// boundary (a model agent) run in a sandbox that does not confine it
	// (local).
	AllowUnconfined bool

	// Exactly one of Prompt (passed literally) and PromptFile.
	Prompt     string
	PromptFile string
	// PromptArgs fill {{KEY}} placeholders of a PromptFile.
	PromptArgs map[string]string

	// BranchStrategy says where the agent's commits go; a zero Type is the
	// sandbox provider's default (head for bind-mount, merge-to-head for
	// isolated).
	BranchStrategy worktree.Strategy

	MaxIterations     int           // default DefaultMaxIterations
	CompletionSignals []string      // default [DefaultCompletionSignal]
	IdleTimeout       time.Duration // default DefaultIdleTimeout
	CompletionTimeout time.Duration // default DefaultCompletionTimeout
	// TokenBudget stops the run before its next iteration once its agent
	// reported this many tokens in all (input, output, cache reads and
	// writes); 0 is no budget. A session's is shared by its steps.
	TokenBudget int64

	CopyToWorktree []string
	Env            map[string]string
	// ShowEnv names env keys whose values may appear in logs and output;
	// every other value of the run's env is redacted there.
	ShowEnv []string

	Hooks Hooks
	// Output asks for structured output (Result.Output): the payload of
	// the last <Tag>…</Tag> in the agent's final text. It needs
	// MaxIterations 1 and a prompt that contains the opening tag.
	Output *output.Spec
	// Timeouts bound the lifecycle steps (worktree, sandbox creation,
	// hooks without their own, sync, merge); zero values take
	// DefaultTimeouts.
	Timeouts Timeouts

	// ResumeOptions: ResumeSession resumes an agent session on iteration
	// 1 (MaxIterations must be 1); ForkSession forks it instead. A result
	// gives them for its own session (Result.Resume).
	ResumeOptions

	Logging Logging

	// OnEvent receives every agent event; panics are recovered.
	OnEvent func(AgentEvent)
	// OnSandboxProgress receives what the sandbox provider reports while
	// it creates the sandbox (a queue the run waits in, say); panics are
	// recovered. The run's log shows the reports too.
	OnSandboxProgress func(SandboxProgress)
	// OnPhase receives each phase the run enters (PhaseEvent): waiting
	// for its place, the worktree, the sandbox, each iteration, the
	// teardown, and PhaseDone at the end (a session's come under its
	// name, each iteration counted within its step); panics are
	// recovered.
	OnPhase func(PhaseEvent)
	// OnEgressDenied receives each connection or name lookup the
	// sandbox's egress policy refused; panics are recovered. The run's
	// log shows them too.
	OnEgressDenied func(EgressDenied)

	// ExpressionTimeout bounds each !`command` of a prompt file (default 30s).
	ExpressionTimeout time.Duration
	// Logger receives diagnostic logs (default: discarded). Env values are
	// never logged.
	Logger hclog.Logger
	// Version is sanddune's version, set as a label on provider resources.
	Version string
}

// SandboxRef is a sandbox provider block: its address for messages (e.g.
// "sandbox.docker.default"), the plugin (type label) and its decoded
// config.
type SandboxRef struct {
	Address  string
	Plugin   string
	Provider sdk.SandboxProvider
	Config   sdk.Config
	// Restart returns the provider anew once its plugin died (relaunching
	// it): a run then removes its sandbox through it, salvaging an
	// isolated one's work first. Nil: the run's error names what is left.
	Restart func(context.Context) (sdk.SandboxProvider, error)
	// Egress, when set, is the only network the sandbox may reach (the
	// block's egress block); the provider must declare the egress
	// capability.
	Egress *Egress
}

// Egress is a sandbox's egress policy. Entries are a name, `*.domain`, an
// IP or a CIDR, each optionally with `:port` (docs/configuration.md).
type Egress struct {
	Allow []string
	// Hosts are names the sandbox resolves to fixed addresses.
	Hosts map[string]string
	// NoAgent leaves out the endpoints the run's agent plugin declares
	// (`agent = false`); they are allowed by default.
	NoAgent bool
}

// AgentRef is an agent provider block, like SandboxRef.
type AgentRef struct {
	Address  string
	Plugin   string
	Provider sdk.AgentProvider
	Config   sdk.Config
}

// Logging configures a run's log.
type Logging struct {
	Mode runlog.Mode
	Path string // file mode: override the log path
	// Terminal shows stdout-mode progress and the file-mode hint; runs of
	// one process should share one (default: a new one on os.Stdout and
	// os.Stderr).
	Terminal *runlog.Terminal
}

// AgentEvent is an agent event as seen by observers (--events, OnEvent).
type AgentEvent struct {
	Run       string
	Iteration int
	Time      time.Time
	Event     sdk.Event
}

// PhaseEvent is a run entering a phase, as seen by observers (--events,
// OnPhase, the live view) and in the run's state file (`sanddune
// status`). Phase is one of the error phases (worktree, sandbox, agent,
// sync-out, merge, ...) or PhaseWaiting, PhaseDone.
type PhaseEvent struct {
	Run string
	// Block and Key are the run block's label and an instance's for_each
	// key, at PhaseWaiting and PhaseDone ("" otherwise, and for a session
	// or a run built in Go): an instance planned at run time is placed
	// under its block by them, whatever its name.
	Block, Key string
	Time       time.Time
	Phase      Phase
	// Iteration is the agent's iteration (PhaseAgent; at PhaseDone the
	// iterations run), of MaxIterations.
	Iteration, MaxIterations int
	// Usage is what the finished iterations used, nil when the agent
	// reported nothing.
	Usage   *sdk.Usage
	Branch  string
	LogFile string
	// At PhaseDone: whether the run failed (or was cancelled), and its
	// commits.
	Failed, Cancelled bool
	Commits           int
}

// SandboxProgress is a sandbox provider's progress report as seen by
// observers (--events, OnSandboxProgress).
type SandboxProgress struct {
	Run  string
	Time time.Time
	sdk.Progress
}

// EgressDenied is a refusal of the sandbox's egress policy as seen by
// observers (--events, OnEgressDenied).
type EgressDenied struct {
	Run  string
	Time time.Time
	sdk.EgressDenial
}
