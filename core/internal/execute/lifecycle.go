package execute

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// Lifecycle is a worktree, and at times a sandbox in it, kept open across
// runs (core.CreateWorktree, core.CreateSandbox): the steps of a run taken
// one call at a time. Its methods are safe for concurrent use; runs in
// it take turns.
type Lifecycle struct {
	mu     sync.Mutex
	r      *runner
	closed bool
	res    *run.Result
	err    error
}

// ErrClosed is a call on a closed worktree or sandbox.
var ErrClosed = errors.New("already closed")

// OpenWorktree prepares the workspace of s (branch, worktree, copies, host
// on_worktree_ready hooks) and opens its log. s's sandbox is unused.
func OpenWorktree(ctx context.Context, s *Spec) (*Lifecycle, error) {
	c := *s
	c.Sandbox.Provider = nil // no preflight: the sandboxes come later
	r, err := start(ctx, &c)
	if err != nil {
		return nil, err
	}
	if err := r.begin(ctx); err != nil {
		return nil, err
	}
	if err := r.setupWorktree(ctx); err != nil {
		return nil, r.finish(ctx, err)
	}
	return &Lifecycle{r: r}, nil
}

// Dir is the worktree's directory on the host; Branch its branch.
func (l *Lifecycle) Dir() string    { return l.r.hostDir() }
func (l *Lifecycle) Branch() string { return l.r.ws.Branch }

// OpenSandbox creates the sandbox of s (its provider, config, env and
// hooks) in the worktree; one at a time.
func (l *Lifecycle) OpenSandbox(ctx context.Context, s *Spec) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return &run.Error{Run: l.r.name, Phase: run.PhaseSandbox, Err: ErrClosed}
	case l.r.sb != nil:
		return &run.Error{Run: l.r.name, Phase: run.PhaseSandbox, Err: errors.New("the worktree has a sandbox already: close it first")}
	}
	r := l.r
	c := *r.Spec
	c.Sandbox, c.Caps, c.Env = s.Sandbox, s.Caps, s.Env
	c.Hooks.HostOnSandboxReady, c.Hooks.SandboxOnSandboxReady = s.Hooks.HostOnSandboxReady, s.Hooks.SandboxOnSandboxReady
	r.Spec = &c
	// Earlier steps may have moved the branch: an isolated sandbox starts
	// from its tip (a bind-mounted one sees the worktree as it is).
	r.sandboxBase = ""
	if c.Caps.Contract == sdk.ContractIsolated {
		tip, err := worktree.Git(ctx, r.Repo.Root, "rev-parse", "--verify", "refs/heads/"+r.ws.Branch)
		if err != nil {
			return &run.Error{Run: r.name, Phase: run.PhaseSandbox, Err: fmt.Errorf("reading the tip of branch %s: %w", r.ws.Branch, err),
				Hint: "check the branch with git log " + r.ws.Branch + "; the worktree is at " + r.hostDir()}
		}
		r.sandboxBase = tip
	}
	if err := r.preflight(ctx); err != nil {
		return err
	}
	if err := r.setupSandbox(ctx); err != nil {
		l.closeSandbox(ctx)
		return err
	}
	return nil
}

// Run runs s's agent, prompt and loop (or its interactive session) in
// the open sandbox, or a session on the host in the worktree, and returns
// its result, with the commits it made (an isolated sandbox's are synced
// out onto the host branch as the run ends; its uncommitted work stays for
// the next run, and is saved as a patch at CloseSandbox).
func (l *Lifecycle) Run(ctx context.Context, s *Spec) (*run.Result, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.r
	onHost := s.Sandbox.Provider == nil && s.Interactive != nil // sandbox = "none"
	switch {
	case l.closed:
		return nil, &run.Error{Run: s.Name, Phase: run.PhaseAgent, Err: ErrClosed}
	case onHost && r.sb != nil:
		return nil, &run.Error{Run: s.Name, Phase: run.PhaseSandbox, Err: errors.New("the worktree has a sandbox open: close it before a session on the host")}
	case !onHost && r.sb == nil:
		return nil, &run.Error{Run: s.Name, Phase: run.PhaseSandbox, Err: errors.New("the worktree has no sandbox: create one first")}
	}
	shared, session := r.Spec, r.res
	defer func() { r.Spec, r.res = shared, session }()
	c := *s
	if !onHost {
		c.Sandbox, c.Caps = shared.Sandbox, shared.Caps
	}
	r.Spec, r.res = &c, &run.Result{Name: s.Name}
	start := time.Now()
	before := r.sandboxHead(ctx)
	r.progress.Info("run %s: agent %s", s.Name, s.Agent.Address)
	runErr := r.body(ctx)
	res := r.res
	res.Elapsed = time.Since(start)
	res.Branch, res.LogFile = r.ws.Branch, session.LogFile
	if r.Caps.Contract == sdk.ContractIsolated && r.sb != nil {
		// Each run's commits reach the host branch as it ends.
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout+r.Timeouts.SyncOut)
		out, failed, _ := r.syncOut(tctx, r.sb, true)
		cancel()
		if res.Commits == nil {
			res.Commits = out.Commits
		}
		if runErr == nil {
			runErr = failed
		}
	} else if after := r.sandboxHead(ctx); before != "" && after != "" {
		res.Commits, _ = r.Repo.Commits(context.WithoutCancel(ctx), before, after)
	}
	var err error
	if runErr != nil {
		err = runErr
	}
	res, err = redacted(s.Redact, res, err)
	session.Iterations = append(session.Iterations, res.Iterations...)
	session.Steps = append(session.Steps, run.Outcome{Name: s.Name, Result: res, Err: err})
	return res, err
}

// CloseSandbox syncs an isolated sandbox's commits out and removes the
// sandbox; the worktree stays. Closing no sandbox does nothing.
func (l *Lifecycle) CloseSandbox(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closeSandbox(ctx)
}

func (l *Lifecycle) closeSandbox(ctx context.Context) error {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout+l.r.Timeouts.SyncOut)
	defer cancel()
	if err := l.r.closeSandbox(tctx); err != nil {
		return err
	}
	return nil
}

// Close closes the sandbox, if one is open, and the worktree: merge for
// merge-to-head, commits listed, a clean worktree removed and a dirty one
// preserved (run.Result.PreservedWorktreePath). Its result holds every run's
// (Steps). Idempotent: later calls return the first one's result.
func (l *Lifecycle) Close(ctx context.Context) (*run.Result, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		l.res, l.err = redacted(l.r.Redact, l.r.res, l.r.finish(ctx, nil))
	}
	return l.res, l.err
}
