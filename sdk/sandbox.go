package sdk

import (
	"context"
	"time"
)

// Contract says how a sandbox reaches the code.
type Contract string

const (
	// ContractBindMount: the host worktree is mounted into the sandbox; the
	// agent's commits land in the host repo directly.
	ContractBindMount Contract = "bind-mount"
	// ContractIsolated: the sandbox has its own filesystem; the core syncs
	// the code in (git bundle) and the commits out.
	ContractIsolated Contract = "isolated"
)

// SandboxCapabilities are static facts a sandbox provider declares. The host
// refuses a config that asks for something the provider cannot enforce,
// before anything starts.
type SandboxCapabilities struct {
	Contract Contract
	// NetworkNone: a sandbox configured with `network = "none"` cannot open
	// a connection (the conformance kit checks it).
	NetworkNone bool
	// TTY: the provider's sandboxes implement TTYSandbox (an interactive
	// terminal).
	TTY bool
	// Sudo: ExecRequest.Sudo is honoured.
	Sudo bool
	// Confines: the sandbox is a security boundary around the agent (its
	// own filesystem view, processes and user), so the agent may skip its
	// permission prompts there. A provider that runs commands as the user
	// on the host (local) leaves it false.
	Confines bool
	// Egress: CreateRequest.Egress is enforced at the network level, for
	// every program in the sandbox, and the sandboxes implement
	// EgressWatcher (the conformance kit checks both).
	Egress bool
	// Mounts: CreateRequest.Mounts are bind-mounted, writable by the
	// sandbox's user both ways, and listed in SandboxInfo.Mounts (the
	// conformance kit checks).
	Mounts bool
}

// SandboxProvider is implemented by sandbox plugins. One provider process
// serves every run of a sanddune process, possibly concurrently, and every
// provider block of its type: per-block settings arrive in each call.
type SandboxProvider interface {
	Provider
	// Describe returns what the host needs to know about a sandbox under a
	// config: the env it layers into CreateRequest.Env.
	Describe(ctx context.Context, cfg Config) (SandboxDescription, error)
	// Preflight checks, before any worktree is created, that a sandbox can be
	// created with this config on this machine (daemon reachable, image
	// present, binary installed...). A failure says what to do about it.
	// The host asks once per block config, repository and user for as
	// long as the plugin process runs (a failure is asked again): a
	// plugin need not remember its answers within a sanddune process.
	Preflight(ctx context.Context, req PreflightRequest) error
	// Create starts a sandbox for one run. When ctx is cancelled (Ctrl-C),
	// the host stops waiting at once: do not abort an engine request that
	// makes a resource you could not then find, finish it and remove
	// the resource. A sandbox returned after ctx ended is closed by the
	// SDK, and a stopping plugin waits for the Creates in progress.
	Create(ctx context.Context, req CreateRequest) (Sandbox, error)
}

// SandboxDescription is static knowledge about a sandbox under a config.
type SandboxDescription struct {
	// Env is the sandbox-provider env layer (the block's `env`, say): the
	// host merges it with the agent-provider layer (they must not overlap),
	// above .sanddune/.env and below the run's env, into CreateRequest.Env.
	// A provider does not apply it again itself.
	Env map[string]string
	// EgressConflicts says what in this config keeps an egress policy from
	// holding, each at its attribute (e.g. network = "host": the sandbox
	// shares the host's network). The host reports them as errors for a
	// block with an egress block, before anything starts.
	EgressConflicts Diagnostics
}

// PreflightRequest is what Preflight may check.
type PreflightRequest struct {
	Config Config
	// HostRepoPath is the host repository root.
	HostRepoPath string
	// HostUID, HostGID are the ids of the user running sanddune.
	HostUID, HostGID int
}

// CreateRequest is the run's context handed to Create.
type CreateRequest struct {
	Config Config
	// RunID identifies the run; providers label resources with it.
	RunID string
	// RunName is the human name of the run (log prefix).
	RunName string
	// HostRepoPath is the host repository root.
	HostRepoPath string
	// WorktreePath is the host worktree to mount (bind-mount contract only;
	// empty for isolated providers).
	WorktreePath string
	// GitMounts are host paths holding the git metadata the worktree needs
	// (its gitdir and the common dir's objects/refs), to be mounted at the
	// same absolute path in the sandbox (bind-mount contract only).
	GitMounts []Mount
	// Env is the environment every Exec in this sandbox starts with.
	Env map[string]string
	// Labels are attached to provider resources (containers, VMs...).
	Labels map[string]string
	// HostUID, HostGID are the ids of the user running sanddune.
	HostUID, HostGID int
	// Progress, when set, receives what Create is doing or waiting for
	// while it runs, in order; providers call Report. A report may block
	// for a moment (it crosses the plugin connection).
	Progress func(Progress)
	// Egress, when set, is the only network the sandbox may reach
	// (providers declaring the Egress capability; nil: no policy).
	Egress *EgressPolicy
	// Mounts are host directories the host asks to see in the sandbox
	// (providers declaring the Mounts capability; others get none), each
	// at its SandboxPath: absolute, or "~/..." under the sandbox's home.
	// A provider that cannot make one writable by the sandbox's user
	// leaves it out of SandboxInfo.Mounts (and the sandbox), and the host
	// copies through CopyIn and CopyOut instead.
	Mounts []Mount
}

// EgressPolicy is a sandbox's allowed network, as the host validated it
// (the agent's endpoints already added). An entry is a name, `*.domain`
// (any subdomain), an IP or a CIDR, each optionally with `:port`; a name
// without a port allows 443 and 80, an IP or CIDR without a port every
// port. Everything else is refused, TCP and UDP.
type EgressPolicy struct {
	Allow []string
	// Hosts are names the sandbox resolves to fixed addresses; reaching
	// one takes an Allow entry like any name.
	Hosts map[string]string
}

// EgressDenial is one refused connection or name lookup.
type EgressDenial struct {
	// Host is the name the client asked for (SNI, HTTP Host, DNS query)
	// or else the address.
	Host string
	// Port is 0 for a name lookup.
	Port int
	// Proto is "tcp", "udp" or "dns".
	Proto string
	// Reason says why, e.g. "not in egress.allow".
	Reason string
}

// EgressWatcher is implemented by the sandboxes of providers that declare
// the Egress capability.
type EgressWatcher interface {
	// WatchEgress calls report for every refusal of the sandbox's policy,
	// in order, until ctx ends; then it returns nil. Over the plugin
	// protocol ctx also ends when the host closes the sandbox, and the
	// host receives every refusal reported before WatchEgress returned.
	WatchEgress(ctx context.Context, report func(EgressDenial)) error
}

// Report passes p to r.Progress, if any. Report what the user would
// otherwise wait for in silence (a queue, a slow start), not every step.
func (r CreateRequest) Report(p Progress) {
	if r.Progress != nil {
		r.Progress(p)
	}
}

// Progress is one report of a long call in progress, for the user watching
// the run: the host shows it in the run's progress output and its events.
type Progress struct {
	// Waiting: the call is held up by something outside the run (a queue,
	// a quota), not working on it. The host shows "waiting: Message" and
	// does not count the time until the next report against the run's
	// create_sandbox timeout.
	Waiting bool
	// Message is one short line, e.g. "queued behind 5 running pods
	// (max_concurrent 5)".
	Message string
}

// Mount is a host path made visible in the sandbox.
type Mount struct {
	HostPath    string
	SandboxPath string
	ReadOnly    bool
}

// SandboxInfo describes a created sandbox.
type SandboxInfo struct {
	// ID is the provider's identifier (container id, directory...).
	ID string
	// RepoPath is the repository (worktree) path inside the sandbox.
	RepoPath string
	// HomePath is the agent's home directory inside the sandbox.
	HomePath string
	// UID is the user id commands run as, when the provider knows it (as a
	// container's user); nil makes the host ask the sandbox (`id -u`).
	UID *int
	// Mounts are the CreateRequest.Mounts in place, SandboxPath absolute.
	Mounts []Mount
}

// Sandbox is one live sandbox. All methods are safe for concurrent use.
type Sandbox interface {
	Info() SandboxInfo
	// Exec runs a command and streams its output to out while it runs.
	// Cancelling ctx kills the process (tree) inside the sandbox. A non-zero
	// exit is not an error: it is reported in ExecResult.
	Exec(ctx context.Context, req ExecRequest, out OutputFunc) (ExecResult, error)
	// CopyIn copies a host file or directory (recursively) to sandboxPath.
	// sandboxPath must be inside the sandbox's confined area; relative paths
	// resolve against RepoPath.
	CopyIn(ctx context.Context, hostPath, sandboxPath string) error
	// CopyOut copies a sandbox file or directory to hostPath.
	CopyOut(ctx context.Context, sandboxPath, hostPath string) error
	// Close tears the sandbox down. It is idempotent.
	Close(ctx context.Context) error
}

// ExecRequest is one command. Exactly one of Argv and Shell is set: Argv is
// executed without any shell; Shell is a command string run by `sh -c` (for
// hooks and other user-authored shell).
type ExecRequest struct {
	Argv  []string
	Shell string
	// Cwd is the working directory; empty means RepoPath. Relative paths
	// resolve against RepoPath. It must stay inside the sandbox.
	Cwd string
	// Env is added to the sandbox env for this command.
	Env map[string]string
	// Sudo runs the command as root (providers that declare Sudo).
	Sudo bool
	// Stdin is written to the process and then closed. Nil gives EOF at once.
	Stdin []byte
	// Timeout kills the process tree after this long; zero means none.
	Timeout time.Duration
}

// Stream names an output stream.
type Stream int

const (
	Stdout Stream = 1
	Stderr Stream = 2
)

// OutputLine is one line of output, without its trailing newline. A line
// longer than MaxLineBytes is delivered in pieces: every piece but the last
// has Partial set.
type OutputLine struct {
	Stream  Stream
	Text    []byte
	Partial bool
}

// MaxLineBytes caps one OutputLine piece.
const MaxLineBytes = 1 << 20

// OutputFunc receives output in order. It must not retain line.Text after
// returning.
type OutputFunc func(line OutputLine)

// ExecResult is how a command ended.
type ExecResult struct {
	ExitCode int
	TimedOut bool
}
