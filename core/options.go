package core

import (
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/missingstudio/sanddune/core/runlog"
	"github.com/missingstudio/sanddune/sdk"
)

// RunOptions is one run: a prompt, an agent and a sandbox turned into
// commits on a branch. The CLI builds it from a `run` block; library users
// build it directly. Relative paths resolve against BaseDir (the config
// file's directory, or the process working directory when empty), except
// CopyToWorktree, which resolves against the repo root.
type RunOptions struct {
	// Name is the run's name: log prefix, worktree and temp-branch name.
	Name string
	// Repo is the host repository; empty means the git repo containing the
	// working directory.
	Repo    string
	BaseDir string

	Sandbox ProviderRef
	Agent   ProviderRef

	// Exactly one of Prompt (passed literally) and PromptFile.
	Prompt     string
	PromptFile string
	// PromptArgs fill {{KEY}} placeholders of a PromptFile.
	PromptArgs map[string]string

	BranchStrategy BranchStrategy

	MaxIterations     int           // default 1
	CompletionSignals []string      // default ["<promise>COMPLETE</promise>"]
	IdleTimeout       time.Duration // default 10m
	CompletionTimeout time.Duration // default 60s

	CopyToWorktree []string
	Env            map[string]string

	Hooks Hooks

	// ResumeSession resumes an agent session on iteration 1 (MaxIterations
	// must be 1); ForkSession forks it instead.
	ResumeSession string
	ForkSession   bool

	Logging Logging

	// OnEvent receives every agent event; panics are recovered.
	OnEvent func(AgentEvent)

	// ExpressionTimeout bounds each !`command` of a prompt file (default 30s).
	ExpressionTimeout time.Duration
	// Logger receives diagnostic logs (default: discarded). Env values are
	// never logged.
	Logger hclog.Logger
	// Version is sanddune's version, set as a label on provider resources.
	Version string
}

// ProviderRef is a configured provider block: the plugin, its decoded
// config and its address for messages (e.g. "sandbox.docker.default").
type ProviderRef struct {
	Address  string
	Plugin   string // type label, e.g. "docker"
	Provider sdk.Provider
	Config   sdk.Config
}

// StrategyType names a branch strategy.
type StrategyType string

const (
	StrategyHead        StrategyType = "head"
	StrategyMergeToHead StrategyType = "merge-to-head"
	StrategyBranch      StrategyType = "branch"
)

// BranchStrategy says where the agent's commits go. A zero Type means the
// provider's default (head for bind-mount, merge-to-head for isolated).
type BranchStrategy struct {
	Type StrategyType
	// Branch is the target branch for StrategyBranch.
	Branch string
	// BaseBranch is what a new Branch starts from (default HEAD).
	BaseBranch string
}

// Hooks run around sandbox creation.
type Hooks struct {
	HostOnWorktreeReady   []Hook // sequential, on the host, in the worktree
	HostOnSandboxReady    []Hook // on the host, parallel with SandboxOnSandboxReady
	SandboxOnSandboxReady []Hook // inside the sandbox
}

// Hook is one shell command (shell by design).
type Hook struct {
	Command string
	Timeout time.Duration // default 60s
	Sudo    bool          // sandbox hooks only
}

// LogMode is where progress goes.
type LogMode string

const (
	LogFile   LogMode = "file"   // default: .sanddune/logs/<run>-<ts>.log
	LogStdout LogMode = "stdout" // live progress on the terminal
)

// Logging configures a run's log.
type Logging struct {
	Mode LogMode
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
