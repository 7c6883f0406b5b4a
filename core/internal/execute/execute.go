// Package execute carries out one planned run: the branch and worktree,
// the sandbox, the hooks, the iteration loop and the teardown.
//
// Teardown runs whatever happened, also after a failure or a cancelled
// context: commits are never lost (they stay on their branch, which a
// failed merge-to-head keeps), uncommitted work stays in a preserved
// worktree or, for an isolated sandbox, in a patch file; the error says
// where. Runs share no state: several may run at once in one process, on
// different branches.
package execute

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/missingstudio/sanddune/core/gc"
	"github.com/missingstudio/sanddune/core/internal/gitsync"
	"github.com/missingstudio/sanddune/core/internal/hooks"
	"github.com/missingstudio/sanddune/core/internal/prompt"
	"github.com/missingstudio/sanddune/core/internal/redact"
	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/core/runlog"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// Teardown steps get their own time: they run after a cancellation too.
const (
	teardownTimeout = 2 * time.Minute
	probeTimeout    = 10 * time.Second
)

// Spec is a planned run: its description (run.Options) with the
// defaults applied and every value checked and resolved, and what the
// plan worked out. In the description, Env is the resolved env, Hooks
// have their timeouts, Output is compiled and Logging.Path is absolute
// ("" = .sanddune/logs/<run>-<stamp>.log); a Sandbox without a Provider
// is none (an interactive session on the host).
type Spec struct {
	run.Options
	// Repo (the repository) and Prompt (the template) are Options'
	// resolved.
	Repo       *worktree.Repo
	Prompt     *prompt.Template
	HostBranch string // "" when detached
	Strategy   worktree.Plan

	Caps sdk.SandboxCapabilities
	Desc sdk.AgentDescription
	// Egress is the sandbox's egress policy (the block's and the agent's
	// endpoints), nil when it has none.
	Egress *sdk.EgressPolicy
	// CaptureSessions copies each iteration's session to the host.
	CaptureSessions bool

	// Redact hides secret values (the env's) in the log, the events, the
	// result's stdout and the error.
	Redact    *redact.Redactor
	CopyPaths []string

	// MergeBranches are merged into the run's branch on the host before
	// its sandbox starts (merge.go); OnMergeConflict says what a conflict
	// does.
	MergeBranches   []string
	OnMergeConflict OnConflict
	// Interactive makes the run an interactive session instead of the
	// iterations; nil for an unattended run.
	Interactive *Interactive
	// BranchOf is the run whose result is on the run's branch
	// ("run.<label>"), when it was planned from that run's result: the
	// branch existing is expected then.
	BranchOf string
	// Budgets are the token budgets the run spends: its own (TokenBudget;
	// a session's is shared by its steps) and its pipeline's.
	Budgets []*run.Budget
}

// Run asks the sandbox provider for its preflight, then runs. On failure
// it returns a *run.Error and, once setup began, a partial result as well.
// Secret values (Spec.Redact) are hidden in both.
func Run(ctx context.Context, s *Spec) (*run.Result, error) {
	res, err := runSpec(ctx, s)
	return redacted(s.Redact, res, err)
}

// redacted hides rd's secret values in res (its steps' too) and err.
func redacted(rd *redact.Redactor, res *run.Result, err error) (*run.Result, error) {
	if res != nil {
		res.Stdout = rd.String(res.Stdout)
		for i := range res.Steps {
			st := &res.Steps[i]
			if st.Result != nil && st.Result != res {
				st.Result.Stdout = rd.String(st.Result.Stdout)
			}
			st.Err = rd.Error(st.Err)
		}
	}
	return res, rd.Error(err)
}

func runSpec(ctx context.Context, s *Spec) (*run.Result, error) {
	if s.Sandbox.Provider != nil {
		s.Repo.PrefetchIdentity(ctx) // while the preflight runs: the sandbox's git needs it
	}
	r, err := start(ctx, s)
	if err != nil {
		return nil, err
	}
	r.lateCaptures = true
	return r.run(ctx, r.body)
}

// start makes the runner of s and runs the sandbox provider's preflight.
func start(ctx context.Context, s *Spec) (*runner, error) {
	r := &runner{Spec: s, name: s.Name, start: time.Now()}
	r.log = s.Logger
	if r.log == nil {
		r.log = hclog.NewNullLogger()
	}
	r.log = r.log.Named(r.name)
	if ctx.Err() != nil {
		return nil, &run.Error{Run: r.name, Phase: run.PhasePreflight, Err: context.Cause(ctx), Cancelled: true}
	}
	if err := r.spent(0); err != nil { // a pipeline's, by the runs before
		return nil, err
	}
	if err := r.preflight(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// runner is the state of one run.
type runner struct {
	*Spec
	start time.Time
	name  string
	log   hclog.Logger
	stamp string

	progress *runlog.Log
	ws       *worktree.Workspace
	sb       sdk.Sandbox
	// sbEnv is the env sb was created with: what every Exec in it
	// starts with, so a run sends only what differs (execEnv).
	sbEnv    map[string]string
	egress   *egressWatch // the sandbox's egress refusals
	res      *run.Result
	syncedIn bool
	// closing is the sandbox being removed, closeErr how it went.
	closing  sdk.Sandbox
	closeErr error
	// sandboxDied: the sandbox plugin's process is gone; the teardown
	// cleans up through it relaunched (collect), and says so in cleanup.
	sandboxDied bool
	cleanup     *cleanup
	// sandboxBase is the branch tip a sandbox opened in a kept worktree,
	// or after merge_branches, starts from ("" = ws.Base); see syncBase.
	sandboxBase string
	// conflicts are the merge_branches that did not merge.
	conflicts []worktree.Conflict
	// refsBefore are the host's branches and tags when the sandbox started.
	refsBefore map[string]string
	refsAt     time.Time
	// lateCaptures lets the teardown wait for the session captures
	// (captures, set by iterate) before it removes the sandbox.
	lateCaptures bool
	captures     *sessionCaptures
	// sessionDir is the host directory asked to be mounted at the agent's
	// session directory; sessionMounts holds it once the sandbox has.
	sessionDir    string
	sessionMounts []sdk.Mount
	// statePath is the run's state file, host this host's name (phase.go).
	statePath, host string
	phaseMu         sync.Mutex // setup steps overlap: enter may be called at once
}

// Preflight asks the sandbox provider of each spec whether it can create
// that run's sandbox here and now, making none (validate --preflight):
// each sandbox block once per repo, in order. It returns the failures.
func Preflight(ctx context.Context, specs []*Spec) []error {
	asked := map[[2]string]bool{}
	var errs []error
	for _, s := range specs {
		key := [2]string{s.Sandbox.Address, s.Repo.Root}
		if s.Sandbox.Provider == nil || asked[key] {
			continue
		}
		asked[key] = true
		if _, err := start(ctx, s); err != nil {
			errs = append(errs, s.Redact.Error(err))
		}
	}
	return errs
}

// preflight asks the sandbox provider whether it can create a sandbox
// here and now.
func (r *runner) preflight(ctx context.Context) error {
	if r.Sandbox.Provider == nil {
		return nil
	}
	if err := r.Sandbox.Provider.Preflight(ctx, sdk.PreflightRequest{
		Config: r.Sandbox.Config, HostRepoPath: r.Repo.Root, HostUID: os.Getuid(), HostGID: os.Getgid(),
	}); err != nil {
		if ctx.Err() != nil {
			return &run.Error{Run: r.name, Phase: run.PhasePreflight, Err: context.Cause(ctx), Cancelled: true}
		}
		return &run.Error{Run: r.name, Phase: run.PhasePreflight, Plugin: r.Sandbox.Address, Err: err,
			Hint: "fix what the sandbox provider reports above, then run again"}
	}
	return nil
}

// fail builds the run.Error of a failed step, marking cancellations.
func (r *runner) fail(ctx context.Context, phase run.Phase, plugin string, iteration int, err error, hint string) *run.Error {
	if plugin == r.Sandbox.Address && pluginDied(err) {
		r.sandboxDied, hint = true, r.crashHint()
	}
	e := &run.Error{Run: r.name, Phase: phase, Plugin: plugin, Iteration: iteration, Err: err, Hint: hint}
	if ctx.Err() != nil {
		e.Cancelled, e.Err, e.Hint = true, context.Cause(ctx), ""
		if !errors.Is(err, context.Cause(ctx)) {
			r.log.Debug("step ended by cancellation", "phase", phase, "error", err)
		}
	}
	return e
}

// runID is the run's sdk.LabelRun value, and the name of its log and
// state files.
func (r *runner) runID() string { return worktree.SanitizeName(r.name) + "-" + r.stamp }

// rerunHint says what a rerun does with the work an interrupted run left.
func (r *runner) rerunHint() string {
	res := r.res
	switch {
	case res.PreservedWorktreePath != "" && r.Strategy.Type == worktree.StrategyBranch:
		return "nothing was lost (see above); run again to continue from the preserved worktree's uncommitted changes"
	case res.PreservedWorktreePath != "":
		return fmt.Sprintf("a rerun starts afresh and does not pick up the preserved worktree: commit its changes there "+
			"(cd %s && git add -A && git commit) and merge branch %s yourself, or discard them (git worktree remove --force %s)",
			res.PreservedWorktreePath, res.Branch, res.PreservedWorktreePath)
	case res.PatchPath != "":
		return fmt.Sprintf("a rerun does not apply the saved patch: apply it where you want the work (git apply %s)", res.PatchPath)
	case r.Strategy.Type == worktree.StrategyHead:
		return "nothing was lost: the agent worked in your checkout, so what it did not commit is there (git status); run again to continue"
	}
	return "nothing was lost (see above); run again to continue"
}

func (r *runner) openLog(ctx context.Context) error {
	path := r.Logging.Path
	if r.Logging.Mode != runlog.Stdout && path == "" {
		dir := r.Repo.StateDir("logs")
		if err := worktree.EnsureIgnoredDir(dir); err != nil {
			return err
		}
		path = filepath.Join(dir, r.runID()+".log")
	}
	l, err := runlog.Open(runlog.Options{Run: r.name, Mode: r.Logging.Mode, Path: path, Terminal: r.Logging.Terminal,
		Cancelled: func() bool { return ctx.Err() != nil }, Redact: r.Redact.String})
	if err != nil {
		return err
	}
	r.progress = l
	return nil
}

// run does the setup, then body (a run's, or a session's steps), then
// the teardown.
func (r *runner) run(ctx context.Context, body func(context.Context) *run.Error) (_ *run.Result, err error) {
	if err := r.begin(ctx); err != nil {
		return nil, err
	}
	var runErr *run.Error
	defer func() { err = r.finish(ctx, runErr) }()
	if runErr = r.prepareWorkspace(ctx); runErr != nil {
		return r.res, runErr
	}
	if runErr = r.setup(ctx); runErr != nil {
		return r.res, runErr
	}
	runErr = body(ctx)
	return r.res, nil
}

// setup readies the prepared workspace (copies, host on_worktree_ready
// hooks) while the sandbox is created, then readies the sandbox. With
// merge_branches the sandbox waits for the merges, which move the branch
// an isolated sandbox starts from (and its labels name).
func (r *runner) setup(ctx context.Context) *run.Error {
	if len(r.MergeBranches) > 0 || r.Sandbox.Provider == nil {
		if err := r.readyWorktree(ctx); err != nil {
			return err
		}
		if err := r.mergeBranches(ctx); err != nil {
			return err
		}
		return r.setupSandbox(ctx)
	}
	created := make(chan *run.Error, 1)
	createCtx, stopCreate := context.WithCancel(ctx)
	defer stopCreate()
	go func() { created <- r.createSandbox(createCtx) }()
	readyErr := r.readyWorktree(ctx)
	if readyErr == nil {
		r.snapshotRefs(ctx) // nothing runs in the sandbox before readySandbox
	} else {
		stopCreate() // a slow sandbox (a queued pod, say) does not hold the failure up
	}
	if err := <-created; readyErr == nil && err != nil {
		return err
	}
	if readyErr != nil {
		return readyErr // the teardown removes the sandbox, if created
	}
	return r.readySandbox(ctx)
}

// begin opens the run's log and result.
func (r *runner) begin(ctx context.Context) *run.Error {
	r.stamp = worktree.Stamp(r.start)
	r.res = &run.Result{Name: r.name}
	if err := r.openLog(ctx); err != nil {
		return &run.Error{Run: r.name, Phase: run.PhaseWorktree, Err: fmt.Errorf("opening the run log: %w", err)}
	}
	r.res.LogFile = r.progress.Path()
	r.openState()
	r.progress.Info("run %s: agent %s, sandbox %s (%s), strategy %s, up to %d iteration(s)",
		r.name, r.Agent.Address, r.Sandbox.Address, r.Caps.Contract, r.Strategy.Type, r.MaxIterations)
	if r.Prompt != nil {
		for _, w := range r.Prompt.Warnings { // the plan's diagnostics warned on the terminal
			r.progress.Info("warning: %s", w)
		}
	}
	return nil
}

// finish tears down what is left, writes the summary and closes the log;
// runErr is the failure so far. It returns the run's error, if any.
func (r *runner) finish(ctx context.Context, runErr *run.Error) error {
	if e := r.teardown(ctx, runErr); runErr == nil {
		runErr = e
	}
	r.res.Elapsed = time.Since(r.start)
	var budgets []string
	for _, b := range r.Budgets {
		r.res.Budgets = append(r.res.Budgets, b.Usage())
		line := b.Usage().String()
		if r.res.Usage() == nil && len(r.res.Iterations) > 0 {
			line += "; the agent reported no token usage, so no budget can stop it"
		}
		budgets = append(budgets, line)
	}
	var summaryErr error
	if runErr != nil {
		summaryErr = runErr
	}
	r.progress.Summary(runlog.Summary{
		Iterations: len(r.res.Iterations), MaxIterations: r.MaxIterations, Signal: r.res.CompletionSignal,
		Commits: len(r.res.Commits), Branch: r.res.Branch, Usage: r.res.Usage(), Budgets: budgets, Stopped: runErr != nil && errors.As(runErr, new(*run.BudgetError)), Elapsed: r.res.Elapsed,
		Preserved: r.res.PreservedWorktreePath, PatchPath: r.res.PatchPath, EgressDenied: r.res.EgressDenied, EgressTargets: r.res.EgressTargets(), Err: summaryErr,
	})
	defer r.ended() // after the log is closed: `logs -f` stops at its end
	defer r.progress.Close()
	if runErr == nil {
		return nil
	}
	runErr.Branch, runErr.Commits = r.res.Branch, r.res.Commits
	runErr.PreservedWorktree, runErr.PatchPath, runErr.LogFile = r.res.PreservedWorktreePath, r.res.PatchPath, r.res.LogFile
	if oe, ok := runErr.Err.(*run.OutputError); ok {
		oe.Branch, oe.Commits, oe.PreservedWorktree = r.res.Branch, r.res.Commits, r.res.PreservedWorktreePath
	}
	if r.cleanup != nil {
		runErr.Hint = r.crashHint()
	}
	if runErr.Cancelled && runErr.Hint == "" {
		runErr.Hint = r.rerunHint()
	}
	r.progress.Error("%v", runErr)
	return runErr
}

// body is one run's work in a prepared worktree and sandbox: the
// iterations, or an interactive session.
func (r *runner) body(ctx context.Context) *run.Error {
	if err := r.prepareResume(ctx); err != nil {
		return r.fail(ctx, run.PhaseAgent, r.Agent.Address, 1, fmt.Errorf("copying session %s into the sandbox: %w", r.ResumeSession, err), "")
	}
	if r.Interactive != nil {
		return r.session(ctx)
	}
	return r.iterate(ctx)
}

// setupWorktree prepares the workspace and readies it: branch, worktree,
// copies, host on_worktree_ready hooks.
func (r *runner) setupWorktree(ctx context.Context) *run.Error {
	if err := r.prepareWorkspace(ctx); err != nil {
		return err
	}
	return r.readyWorktree(ctx)
}

// prepareWorkspace locks and makes the run's branch and worktree.
func (r *runner) prepareWorkspace(ctx context.Context) *run.Error {
	r.enter(run.PhaseWorktree, 0)
	ph := r.progress.Phase("Preparing " + string(r.Strategy.Type) + " workspace")
	var ws *worktree.Workspace
	err := within(ctx, "worktree", r.Timeouts.Worktree, func(ctx context.Context) (err error) {
		ws, err = worktree.Prepare(ctx, r.Repo, r.Strategy, worktree.PrepareOptions{RunName: r.name, Logger: r.log})
		return err
	})
	ph.Done(err)
	if err != nil {
		hint := ""
		var le *worktree.LockedError
		if errors.As(err, &le) {
			hint = "wait for that run to finish, or use another branch"
		}
		return r.fail(ctx, run.PhaseWorktree, "", 0, err, hint)
	}
	r.ws = ws
	r.res.Branch = ws.Branch
	switch {
	case ws.ReusedDirty:
		r.progress.Warn("continuing from the worktree %s: it holds uncommitted changes left by an earlier run of branch %s", ws.Dir, ws.Branch)
	case ws.ExistingBranch && r.BranchOf != "":
		r.progress.Info("continuing %s's branch %s from its tip %.12s", r.BranchOf, ws.Branch, ws.Base)
	case ws.ExistingBranch:
		r.progress.Warn("branch %s already exists (left by an earlier run?): the run continues from its tip %.12s; to start afresh, delete it first (git branch -D %s)", ws.Branch, ws.Base, ws.Branch)
	case ws.DirtyHead:
		r.progress.Warn("the agent works in your working tree %s (branch_strategy head), which has uncommitted changes: they may end up in its commits; commit or stash them first, or use a branch or merge-to-head strategy to keep the agent out of your tree", ws.Dir)
	}
	if ws.Dir != "" && ws.Dir != r.Repo.Root {
		r.progress.Info("worktree %s on branch %s", ws.Dir, ws.Branch)
	} else {
		r.progress.Info("branch %s", orDetached(ws.Branch))
	}
	return nil
}

// readyWorktree copies copy_to_worktree into the worktree and runs the
// host on_worktree_ready hooks. It touches nothing createSandbox does.
func (r *runner) readyWorktree(ctx context.Context) *run.Error {
	ws, hostDir := r.ws, r.hostDir()
	if len(r.CopyPaths) > 0 && r.Strategy.Worktree {
		ph := r.progress.Phase("Copying to worktree")
		var skipped []string
		err := within(ctx, "copy", r.Timeouts.Copy, func(ctx context.Context) (err error) {
			skipped, err = worktree.CopyPaths(ctx, r.Repo.Root, ws.Dir, r.CopyPaths)
			return err
		})
		ph.Done(err)
		if err != nil {
			return r.fail(ctx, run.PhaseCopy, "", 0, err, "check the copy_to_worktree paths")
		}
		r.skipped(skipped)
	}
	if err := r.hookPhase("Running host on_worktree_ready hooks", len(r.Hooks.HostOnWorktreeReady), func() error {
		return hooks.RunHost(ctx, hostDir, r.Hooks.HostOnWorktreeReady, r.hookOutput)
	}); err != nil {
		return r.fail(ctx, run.PhaseHooks, "", 0, err, "fix the hook command (or raise its timeout) and run again")
	}
	return nil
}

// setupSandbox creates the sandbox in the prepared workspace, notes the
// host's refs and readies the sandbox.
func (r *runner) setupSandbox(ctx context.Context) *run.Error {
	if err := r.createSandbox(ctx); err != nil {
		return err
	}
	r.snapshotRefs(ctx)
	return r.readySandbox(ctx)
}

// createSandbox creates the sandbox (none for a session on the host) in
// the prepared workspace: r.sb, r.sbEnv.
func (r *runner) createSandbox(ctx context.Context) *run.Error {
	if r.Sandbox.Provider == nil {
		return nil
	}
	r.enter(run.PhaseSandbox, 0)
	ws := r.ws
	ph := r.progress.Phase("Creating sandbox")
	req := sdk.CreateRequest{
		Config: r.Sandbox.Config, RunID: r.runID(), RunName: r.name,
		HostRepoPath: r.Repo.Root, Env: r.sandboxEnv(ctx), Labels: r.labels(),
		HostUID: os.Getuid(), HostGID: os.Getgid(), Egress: r.Egress, Mounts: r.sessionMount(),
	}
	if r.Caps.Contract == sdk.ContractBindMount {
		req.WorktreePath, req.GitMounts = ws.Dir, ws.GitMounts
	}
	req.Labels[sdk.LabelRun] = req.RunID
	var sb sdk.Sandbox
	// Time the provider reports waiting (in a queue) is not creation time.
	err := withinPausable(ctx, "create_sandbox", r.Timeouts.CreateSandbox, func(ctx context.Context, pause func(bool)) (err error) {
		req.Progress = func(p sdk.Progress) {
			pause(p.Waiting)
			r.sandboxProgress(p)
		}
		sb, err = r.Sandbox.Provider.Create(ctx, req)
		return err
	})
	ph.Done(err)
	if err != nil {
		return r.fail(ctx, run.PhaseSandbox, r.Sandbox.Address, 0, err, "")
	}
	r.sb, r.sbEnv = sb, req.Env
	r.mountedSessions(sb)
	r.log.Debug("sandbox created", "id", sb.Info().ID, "repo", sb.Info().RepoPath)
	r.watchEgress(ctx, sb)
	return nil
}

// readySandbox syncs the code into an isolated sandbox and runs the
// on_sandbox_ready hooks: the first commands in the sandbox, so the host's
// refs are noted before it (snapshotRefs).
func (r *runner) readySandbox(ctx context.Context) *run.Error {
	hostDir := r.hostDir()
	if r.sb == nil {
		if err := r.hookPhase("Running host on_sandbox_ready hooks", len(r.Hooks.HostOnSandboxReady), func() error {
			return hooks.RunHost(ctx, hostDir, r.Hooks.HostOnSandboxReady, r.hookOutput)
		}); err != nil {
			return r.fail(ctx, run.PhaseHooks, "", 0, err, "fix the hook command (or raise its timeout) and run again")
		}
		return nil
	}
	sb := r.sb
	if r.Caps.Contract == sdk.ContractIsolated {
		r.enter(run.PhaseSyncIn, 0)
		ph := r.progress.Phase("Syncing the repository into the sandbox")
		in := r.syncSpec()
		in.AuthorName, in.AuthorEmail = r.Repo.Identity(ctx) // as a bind mount's sandboxEnv
		err := within(ctx, "sync_in", r.Timeouts.SyncIn, func(ctx context.Context) error { return gitsync.SyncIn(ctx, sb, in) })
		ph.Done(err)
		if err != nil {
			return r.fail(ctx, run.PhaseSyncIn, r.Sandbox.Address, 0, err, "")
		}
		r.syncedIn = true
		if len(r.CopyPaths) > 0 {
			if err := r.copyIntoSandbox(ctx); err != nil {
				return r.fail(ctx, run.PhaseCopy, r.Sandbox.Address, 0, err, "check the copy_to_worktree paths")
			}
		}
	}

	n := len(r.Hooks.HostOnSandboxReady) + len(r.Hooks.SandboxOnSandboxReady)
	if err := r.hookPhase("Running on_sandbox_ready hooks", n, func() error {
		return hooks.RunParallel(ctx, hostDir, r.Hooks.HostOnSandboxReady, sb, r.Hooks.SandboxOnSandboxReady, r.hookOutput)
	}); err != nil {
		plugin := ""
		var he *hooks.Error
		if errors.As(err, &he) && he.Where == hooks.Sandbox {
			plugin = r.Sandbox.Address
		}
		return r.fail(ctx, run.PhaseHooks, plugin, 0, err, "fix the hook command (or raise its timeout) and run again")
	}
	return nil
}

// sandboxProgress shows a progress report of the sandbox provider in the
// run's log and passes it to the observer.
func (r *runner) sandboxProgress(p sdk.Progress) {
	p.Message = r.Redact.String(p.Message)
	r.progress.SandboxProgress(p.Waiting, p.Message)
	if r.OnSandboxProgress == nil {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			r.log.Warn("sandbox progress observer panicked; report dropped", "panic", v)
		}
	}()
	r.OnSandboxProgress(run.SandboxProgress{Run: r.Name, Time: time.Now(), Progress: p})
}

// hostDir is where the run's files are on the host.
func (r *runner) hostDir() string {
	if r.ws.Dir == "" {
		return r.Repo.Root
	}
	return r.ws.Dir
}

func (r *runner) skipped(paths []string) {
	if len(paths) > 0 {
		r.progress.Warn("copy_to_worktree: not in the repo, skipped: %s", strings.Join(paths, ", "))
	}
}

func (r *runner) copyIntoSandbox(ctx context.Context) error {
	ph := r.progress.Phase("Copying to sandbox")
	sources, skipped, err := worktree.CopySources(r.Repo.Root, r.CopyPaths)
	if err == nil {
		err = within(ctx, "copy", r.Timeouts.Copy, func(ctx context.Context) error {
			for _, s := range sources {
				if err := r.sb.CopyIn(ctx, s.HostPath, s.Rel); err != nil {
					return fmt.Errorf("copying %s into the sandbox: %w", s.Rel, err)
				}
			}
			return nil
		})
	}
	ph.Done(err)
	r.skipped(skipped)
	return err
}

func (r *runner) hookPhase(title string, n int, hook func() error) error {
	if n == 0 {
		return nil
	}
	r.enter(run.PhaseHooks, 0)
	ph := r.progress.Phase(title)
	err := hook()
	ph.Done(err)
	return err
}

func (r *runner) hookOutput(where, command, line string) {
	r.progress.Output(where+" hook", line)
}

func (r *runner) syncSpec() gitsync.Spec {
	return gitsync.Spec{HostRepo: r.Repo.Root, Branch: r.ws.Branch, Base: r.syncBase(), RunName: r.name}
}

// sandboxEnv is the resolved env plus what git needs in a bind-mounted
// worktree: the host's identity (the host's global git config is not
// mounted) and trust in a repository owned by another uid, both passed as
// command-line-level config (GIT_CONFIG_KEY_n) so no git config file is
// written, and an agent's own identity (`git -c user.name=…`,
// GIT_AUTHOR_NAME) still wins. The run's own env wins over all of it.
func (r *runner) sandboxEnv(ctx context.Context) map[string]string {
	out := make(map[string]string, len(r.Env)+7)
	if _, set := r.Env["GIT_CONFIG_COUNT"]; r.Caps.Contract == sdk.ContractBindMount && !set {
		config := [][2]string{{"safe.directory", "*"}}
		name, email := r.Repo.Identity(ctx)
		if name != "" {
			config = append(config, [2]string{"user.name", name})
		}
		if email != "" {
			config = append(config, [2]string{"user.email", email})
		}
		for i, kv := range config {
			out[fmt.Sprintf("GIT_CONFIG_KEY_%d", i)], out[fmt.Sprintf("GIT_CONFIG_VALUE_%d", i)] = kv[0], kv[1]
		}
		out["GIT_CONFIG_COUNT"] = fmt.Sprint(len(config))
	}
	for k, v := range r.Env {
		out[k] = v
	}
	return out
}

// execEnv is the run's env an Exec in the sandbox must add: what the
// sandbox was not created with (a session step's or a later run's own
// values), none when the sandbox has it all.
func (r *runner) execEnv() map[string]string {
	var out map[string]string
	for k, v := range r.Env {
		if have, ok := r.sbEnv[k]; !ok || have != v {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// syncBase is the commit an isolated sandbox starts from: the run's base,
// or the branch's tip when earlier steps in the worktree moved it.
func (r *runner) syncBase() string {
	if r.sandboxBase != "" {
		return r.sandboxBase
	}
	return r.ws.Base
}

func (r *runner) labels() map[string]string {
	l := map[string]string{
		sdk.LabelSandbox: r.Sandbox.Address,
		sdk.LabelPID:     fmt.Sprint(os.Getpid()),
		gc.LabelRunName:  r.name,
		gc.LabelRepo:     r.Repo.Root,
		gc.LabelBranch:   r.ws.Branch,
		gc.LabelBase:     r.syncBase(),
	}
	if r.Version != "" {
		l[gc.LabelVersion] = r.Version
	}
	if h, err := os.Hostname(); err == nil {
		l[sdk.LabelHost] = h
	}
	return l
}

// runsAsRoot tells whether commands run as uid 0 in the sandbox (agents
// such as Claude Code refuse to skip permissions as root without being
// told): from the sandbox's info, else by asking the sandbox.
func (r *runner) runsAsRoot(ctx context.Context) bool {
	if uid := r.sb.Info().UID; uid != nil {
		return *uid == 0
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var uid string
	res, err := r.sb.Exec(ctx, sdk.ExecRequest{Argv: []string{"id", "-u"}, Timeout: probeTimeout}, func(l sdk.OutputLine) {
		if l.Stream == sdk.Stdout {
			uid += string(l.Text)
		}
	})
	if err != nil || res.ExitCode != 0 {
		r.log.Debug("could not tell the sandbox user's uid", "error", err)
		return false
	}
	return strings.TrimSpace(uid) == "0"
}

func orDetached(b string) string {
	if b == "" {
		return "(detached HEAD)"
	}
	return b
}
