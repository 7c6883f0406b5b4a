package core

import (
	"context"
	"sync"

	"github.com/missingstudio/sanddune/core/internal/execute"
	"github.com/missingstudio/sanddune/core/internal/planning"
)

// Worktree is a worktree kept open across runs and sandboxes. Close it
// when done (defer wt.Close(ctx)): a clean worktree is removed, a dirty
// one preserved and its path returned.
type Worktree struct {
	l    *execute.Lifecycle
	opts RunOptions
}

// Sandbox is a sandbox kept open across runs: each Run reuses the
// container (or VM) and everything installed in it. Close it when done
// (defer sb.Close(ctx)).
type Sandbox struct {
	wt   *Worktree
	ref  SandboxRef
	owns bool // Close closes the worktree too (CreateSandbox)

	mu     sync.Mutex
	closed bool
	res    *Result
	err    error
}

// CreateWorktree creates a worktree for several runs from what o says
// about the worktree: Name ("worktree" when empty), Repo, BaseDir,
// BranchStrategy, CopyToWorktree, Hooks.HostOnWorktreeReady, Logging,
// Timeouts, Logger and Version. Its sandboxes and runs bring the rest.
// The strategy is branch or merge-to-head; head (the host's working
// directory) is refused before anything starts.
func CreateWorktree(ctx context.Context, o RunOptions) (*Worktree, error) {
	if o.Name == "" {
		o.Name = "worktree"
	}
	o.Sandbox, o.Env, o.Hooks = SandboxRef{}, nil, Hooks{HostOnWorktreeReady: o.Hooks.HostOnWorktreeReady}
	if o.BranchStrategy.Type != StrategyBranch && o.BranchStrategy.Type != StrategyMergeToHead {
		return nil, &RunError{Run: o.Name, Phase: PhaseConfig, Err: Diagnostics{{Severity: Error, Block: "run." + o.Name, Attribute: "branch_strategy",
			Summary: "A worktree needs a branch or merge-to-head strategy",
			Detail:  `a worktree of its own is on a named branch (type "branch") or a temporary one merged at the end (type "merge-to-head"); "head" works in the host's working directory`}}}
	}
	spec, err := planning.PlanEnv(ctx, planning.Options{Options: o})
	if err != nil {
		return nil, err
	}
	l, err := execute.OpenWorktree(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &Worktree{l: l, opts: o}, nil
}

// Path is the worktree's directory; Branch its branch.
func (w *Worktree) Path() string   { return w.l.Dir() }
func (w *Worktree) Branch() string { return w.l.Branch() }

// CreateSandbox creates o's sandbox in the worktree, with o's Env (the
// run's layer; each run adds its agent's) and Hooks.HostOnSandboxReady
// and SandboxOnSandboxReady. Its Close removes only the sandbox; the
// worktree stays until w.Close.
func (w *Worktree) CreateSandbox(ctx context.Context, o RunOptions) (*Sandbox, error) {
	ro := w.opts
	ro.Sandbox, ro.Env, ro.Hooks.HostOnSandboxReady, ro.Hooks.SandboxOnSandboxReady = o.Sandbox, o.Env, o.Hooks.HostOnSandboxReady, o.Hooks.SandboxOnSandboxReady
	spec, err := planning.PlanEnv(ctx, planning.Options{Options: ro})
	if err != nil {
		return nil, err
	}
	if err := w.l.OpenSandbox(ctx, spec); err != nil {
		return nil, err
	}
	return &Sandbox{wt: w, ref: o.Sandbox}, nil
}

// Run runs o in a sandbox of its own in the worktree (created for it and
// removed after it). o's repo, branch strategy and copies are the
// worktree's.
func (w *Worktree) Run(ctx context.Context, o RunOptions) (*Result, error) {
	return w.inOwnSandbox(ctx, o, nil)
}

// inOwnSandbox runs o (an interactive session when ia is set) in a
// sandbox created for it and removed after it.
func (w *Worktree) inOwnSandbox(ctx context.Context, o RunOptions, ia *Attachment) (*Result, error) {
	sb, err := w.CreateSandbox(ctx, o)
	if err != nil {
		return nil, err
	}
	defer sb.Close(ctx)
	return w.run(ctx, w.scope(o, sb.ref), ia)
}

// Close closes the worktree (and a sandbox still open in it): merge for
// merge-to-head, a clean worktree removed, a dirty one preserved
// (Result.PreservedWorktreePath). The result lists every commit and, in
// Steps, every run. Idempotent.
func (w *Worktree) Close(ctx context.Context) (*Result, error) { return w.l.Close(ctx) }

// CreateSandbox creates a worktree and a sandbox in it from o
// (CreateWorktree, Worktree.CreateSandbox), owned together: Close removes
// both.
func CreateSandbox(ctx context.Context, o RunOptions) (*Sandbox, error) {
	wt, err := CreateWorktree(ctx, o)
	if err != nil {
		return nil, err
	}
	sb, err := wt.CreateSandbox(ctx, o)
	if err != nil {
		wt.Close(ctx)
		return nil, err
	}
	sb.owns = true
	return sb, nil
}

// Path is the sandbox's worktree on the host.
func (s *Sandbox) Path() string { return s.wt.Path() }

// Run runs o's agent, prompt and loop in the sandbox, reusing it and what
// earlier runs installed. o's sandbox, repo, branch strategy and copies
// are the sandbox's; to continue an earlier run's agent session, set
// o.ResumeSession (see Result.Resume).
func (s *Sandbox) Run(ctx context.Context, o RunOptions) (*Result, error) {
	return s.wt.run(ctx, s.wt.scope(o, s.ref), nil)
}

// Interactive runs an interactive session (the agent's TUI on the user's
// terminal, see core.Interactive) in the sandbox; the runs after it see
// what it left, and its result reports the commits it made.
func (s *Sandbox) Interactive(ctx context.Context, o InteractiveOptions) (*Result, error) {
	return s.wt.run(ctx, s.wt.scope(o.RunOptions, s.ref), &o.Attachment)
}

// Interactive runs an interactive session in a sandbox of its own in the
// worktree (created for it and removed after it), or on the host in the
// worktree with o.NoSandbox. A later Run continues from what it left.
func (w *Worktree) Interactive(ctx context.Context, o InteractiveOptions) (*Result, error) {
	if o.NoSandbox {
		return w.run(ctx, w.scope(o.RunOptions, SandboxRef{}), &o.Attachment)
	}
	return w.inOwnSandbox(ctx, o.RunOptions, &o.Attachment)
}

// scope gives o the worktree's repo, branch strategy, log and timeouts,
// and ref as its sandbox: a run in an open worktree.
func (w *Worktree) scope(o RunOptions, ref SandboxRef) RunOptions {
	base := w.opts
	if o.Name == "" {
		o.Name = base.Name
	}
	o.Sandbox, o.Repo, o.BaseDir, o.BranchStrategy, o.CopyToWorktree, o.Hooks = ref, base.Repo, base.BaseDir, base.BranchStrategy, nil, Hooks{}
	o.Logging, o.Logger, o.Version, o.Timeouts = base.Logging, base.Logger, base.Version, base.Timeouts
	return o
}

// run plans o (an interactive session when ia is set) and runs it in the
// worktree's open sandbox, or on the host for a session without one.
func (w *Worktree) run(ctx context.Context, o RunOptions, ia *Attachment) (*Result, error) {
	if ia != nil && ia.Attach == nil {
		return nil, errNoAttach(o.Name)
	}
	p, err := planRun(ctx, o, ia)
	if err != nil {
		return nil, err
	}
	return w.l.Run(ctx, p.planned[0].Spec)
}

// Close removes the sandbox (after syncing an isolated one's commits
// out) and, for a sandbox from CreateSandbox, the worktree too, whose
// result it returns. Idempotent.
func (s *Sandbox) Close(ctx context.Context) (*Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return s.res, s.err
	}
	s.closed = true
	s.err = s.wt.l.CloseSandbox(ctx)
	if s.owns {
		res, err := s.wt.Close(ctx)
		s.res = res
		if s.err == nil {
			s.err = err
		}
	}
	return s.res, s.err
}
