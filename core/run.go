// Package core is sanddune's run engine: Run turns a prompt, an agent and a
// sandbox into commits on a branch.
//
// A run goes through three stages:
//
//   - checks, before anything starts: options, providers, the prompt and
//     its arguments, the branch strategy, the env (provider overlap,
//     required credentials) and the sandbox provider's preflight. A failure
//     here is a configuration error (exit code 2) or a preflight failure,
//     and leaves nothing behind;
//   - setup: the branch and worktree (locked), copy_to_worktree, host
//     on_worktree_ready hooks, the sandbox (created once per run), sync-in
//     for isolated sandboxes, then the on_sandbox_ready hooks on both
//     sides in parallel;
//   - the iteration loop, then teardown: sync-out (isolated), the commits,
//     merge-to-head, closing the sandbox and the worktree (a clean one is
//     removed, a dirty one preserved), releasing the locks.
//
// Teardown runs whatever happened, also after a failure or a cancelled
// context: commits are never lost (they stay on their branch, which a
// failed merge-to-head keeps), uncommitted work stays in a preserved
// worktree or, for an isolated sandbox, in a patch file; the error says
// where.
//
// Runs share no state: several may run at once in one process, on
// different branches.
package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core/env"
	"github.com/missingstudio/sanddune/core/gitsync"
	"github.com/missingstudio/sanddune/core/hooks"
	"github.com/missingstudio/sanddune/core/prompt"
	"github.com/missingstudio/sanddune/core/runlog"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// Defaults of RunOptions.
const (
	DefaultCompletionSignal  = "<promise>COMPLETE</promise>"
	DefaultIdleTimeout       = 10 * time.Minute
	DefaultCompletionTimeout = 60 * time.Second
)

// Teardown steps get their own time: they run after a cancellation too.
const (
	teardownTimeout = 2 * time.Minute
	probeTimeout    = 10 * time.Second
)

// Run runs one run. On success it returns the result. On failure it
// returns a *RunError and, once setup began, a partial result as well
// (commits, branch, preserved paths so far).
func Run(ctx context.Context, opts RunOptions) (*Result, error) {
	r := &runner{opts: opts, start: time.Now()}
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	if err := r.preflight(ctx); err != nil {
		return nil, err
	}
	return r.run(ctx)
}

// Check runs every check Run makes before it starts anything, except the
// sandbox provider's preflight (which looks at the machine, not the
// options): what `sanddune validate` reports. It returns a *RunError.
func Check(ctx context.Context, opts RunOptions) error {
	r := &runner{opts: opts, start: time.Now()}
	return r.check(ctx)
}

// runner is the state of one run.
type runner struct {
	opts  RunOptions
	start time.Time
	name  string
	log   hclog.Logger

	sandboxP   sdk.SandboxProvider
	agentP     sdk.AgentProvider
	caps       sdk.SandboxCapabilities
	repo       *worktree.Repo
	hostBranch string
	plan       worktree.Plan
	tpl        *prompt.Template
	desc       sdk.AgentDescription
	env        map[string]string
	copyPaths  []string
	stamp      string

	progress *runlog.Log
	ws       *worktree.Workspace
	sb       sdk.Sandbox
	res      *Result
	syncedIn bool
	// refsBefore are the host's branches and tags when the sandbox started.
	refsBefore map[string]string
}

func (r *runner) sandboxAddr() string { return addr(r.opts.Sandbox, "sandbox") }
func (r *runner) agentAddr() string   { return addr(r.opts.Agent, "agent") }

func addr(p ProviderRef, kind string) string {
	switch {
	case p.Address != "":
		return p.Address
	case p.Plugin != "":
		return kind + "." + p.Plugin
	}
	return kind
}

func (r *runner) configErr(err error, hint string) *RunError {
	return &RunError{Run: r.name, Phase: PhaseConfig, Err: err, Hint: hint}
}

// check validates everything it can before anything starts.
func (r *runner) check(ctx context.Context) error {
	o := &r.opts
	r.name = o.Name
	if r.name == "" {
		r.name = "run"
	}
	r.log = o.Logger
	if r.log == nil {
		r.log = hclog.NewNullLogger()
	}
	r.log = r.log.Named(r.name)
	if ctx.Err() != nil {
		return &RunError{Run: r.name, Phase: PhaseConfig, Err: context.Cause(ctx), Cancelled: true}
	}
	if o.MaxIterations == 0 {
		o.MaxIterations = 1
	}
	if len(o.CompletionSignals) == 0 {
		o.CompletionSignals = []string{DefaultCompletionSignal}
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.CompletionTimeout == 0 {
		o.CompletionTimeout = DefaultCompletionTimeout
	}
	switch {
	case o.MaxIterations < 0:
		return r.configErr(fmt.Errorf("max_iterations is %d; it must be at least 1", o.MaxIterations), "")
	case o.IdleTimeout < 0 || o.CompletionTimeout < 0:
		return r.configErr(errors.New("idle_timeout and completion_timeout must be positive"), "")
	case o.ResumeSession != "" && o.MaxIterations > 1:
		return r.configErr(errors.New("resume_session only resumes iteration 1, so max_iterations must be 1"),
			"drop max_iterations, or start a fresh session without resume_session")
	case o.ForkSession && o.ResumeSession == "":
		return r.configErr(errors.New("fork_session needs resume_session (the session to fork)"), "")
	}
	for _, s := range o.CompletionSignals {
		if s == "" {
			return r.configErr(errors.New("a completion signal is empty"), "")
		}
	}
	var ok bool
	if r.sandboxP, ok = o.Sandbox.Provider.(sdk.SandboxProvider); !ok {
		return r.configErr(fmt.Errorf("%s is not a sandbox provider", r.sandboxAddr()), "")
	}
	if r.agentP, ok = o.Agent.Provider.(sdk.AgentProvider); !ok {
		return r.configErr(fmt.Errorf("%s is not an agent provider", r.agentAddr()), "")
	}

	repoDir := o.Repo
	if repoDir != "" && !filepath.IsAbs(repoDir) && o.BaseDir != "" {
		repoDir = filepath.Join(o.BaseDir, repoDir)
	}
	if repoDir == "" {
		repoDir = "."
	}
	repo, err := worktree.Open(ctx, repoDir)
	if err != nil {
		return r.configErr(err, "run sanddune inside a git repository, or set repo")
	}
	r.repo = repo
	if _, err := repo.Head(ctx); err != nil {
		return r.configErr(fmt.Errorf("the repository %s has no commits yet", repo.Root), "make a first commit, then run again")
	}

	if r.tpl, err = prompt.Load(prompt.Source{Inline: o.Prompt, File: o.PromptFile, BaseDir: o.BaseDir, Args: o.PromptArgs}); err != nil {
		return r.configErr(err, "")
	}

	info, err := r.sandboxP.Info(ctx)
	if err != nil {
		return &RunError{Run: r.name, Phase: PhasePreflight, Plugin: r.sandboxAddr(), Err: err}
	}
	if info.Sandbox == nil {
		return r.configErr(fmt.Errorf("%s declares no sandbox capabilities", r.sandboxAddr()), "")
	}
	r.caps = *info.Sandbox
	if !r.caps.Sudo {
		for _, h := range o.Hooks.SandboxOnSandboxReady {
			if h.Sudo {
				return r.configErr(fmt.Errorf("sandbox hook %q asks for sudo, which %s does not support", h.Command, r.sandboxAddr()),
					"drop sudo = true, or use a sandbox provider that supports it")
			}
		}
	}

	if r.hostBranch, err = repo.CurrentBranch(ctx); err != nil {
		return r.configErr(err, "")
	}
	for _, p := range o.CopyToWorktree {
		c, err := worktree.CheckRelPath(p)
		if err != nil {
			return r.configErr(err, "")
		}
		r.copyPaths = append(r.copyPaths, c)
	}
	strategy := worktree.Strategy{Type: worktree.StrategyType(o.BranchStrategy.Type), Branch: o.BranchStrategy.Branch, BaseBranch: o.BranchStrategy.BaseBranch}
	if r.plan, err = worktree.Resolve(strategy, r.caps.Contract, r.hostBranch, len(r.copyPaths) > 0); err != nil {
		return r.configErr(err, "")
	}

	if r.desc, err = r.agentP.Describe(ctx, o.Agent.Config); err != nil {
		return &RunError{Run: r.name, Phase: PhasePreflight, Plugin: r.agentAddr(), Err: err}
	}
	if o.ForkSession && o.ResumeSession == "" {
		return r.configErr(errors.New("fork_session forks resume_session, which is not set"), "set resume_session, or drop fork_session")
	}
	if err := r.checkResume(); err != nil {
		return r.configErr(fmt.Errorf("%s: %w", r.agentAddr(), err), "check resume_session, or drop it to start a new session")
	}
	dotenv, err := env.ReadFile(repo.StateDir(".env"))
	if err != nil {
		return r.configErr(err, "fix the syntax of .sanddune/.env")
	}
	agentEnv := map[string]string{}
	for k, v := range r.desc.Env {
		agentEnv[k] = v
	}
	for k, v := range configEnv(o.Agent.Config) {
		agentEnv[k] = v
	}
	r.env, err = env.Resolve(env.Layers{
		DotEnv: dotenv, Agent: agentEnv, Sandbox: configEnv(o.Sandbox.Config), Run: o.Env, Required: r.desc.RequiredEnv,
	})
	if err != nil {
		return r.configErr(err, "")
	}
	r.log.Debug("env resolved", "keys", env.Keys(r.env))
	return nil
}

// preflight asks the sandbox provider whether it can create a sandbox
// here and now.
func (r *runner) preflight(ctx context.Context) error {
	o := &r.opts
	if err := r.sandboxP.Preflight(ctx, sdk.PreflightRequest{
		Config: o.Sandbox.Config, HostRepoPath: r.repo.Root, HostUID: os.Getuid(), HostGID: os.Getgid(),
	}); err != nil {
		if ctx.Err() != nil {
			return &RunError{Run: r.name, Phase: PhasePreflight, Err: context.Cause(ctx), Cancelled: true}
		}
		return &RunError{Run: r.name, Phase: PhasePreflight, Plugin: r.sandboxAddr(), Err: err,
			Hint: "fix what the sandbox provider reports above, then run again"}
	}
	return nil
}

// configEnv reads the conventional `env` attribute (a map of strings) of a
// provider block, if it has one.
func configEnv(cfg sdk.Config) map[string]string {
	v := cfg.Value
	if v == cty.NilVal || v.IsNull() || !v.IsWhollyKnown() || !v.Type().IsObjectType() || !v.Type().HasAttribute("env") {
		return nil
	}
	v = v.GetAttr("env")
	if v.IsNull() || !v.CanIterateElements() {
		return nil
	}
	out := map[string]string{}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if k.Type() == cty.String && !e.IsNull() && e.Type() == cty.String {
			out[k.AsString()] = e.AsString()
		}
	}
	return out
}

// fail builds the RunError of a failed step, marking cancellations.
func (r *runner) fail(ctx context.Context, phase Phase, plugin string, iteration int, err error, hint string) *RunError {
	e := &RunError{Run: r.name, Phase: phase, Plugin: plugin, Iteration: iteration, Err: err, Hint: hint}
	if ctx.Err() != nil {
		e.Cancelled, e.Err, e.Hint = true, context.Cause(ctx), ""
		if !errors.Is(err, context.Cause(ctx)) {
			r.log.Debug("step ended by cancellation", "phase", phase, "error", err)
		}
	}
	return e
}

func (r *runner) openLog() error {
	o := r.opts
	mode := runlog.Mode(o.Logging.Mode)
	path := o.Logging.Path
	if mode != runlog.Stdout {
		if path == "" {
			dir := r.repo.StateDir("logs")
			if err := worktree.EnsureIgnoredDir(dir); err != nil {
				return err
			}
			path = filepath.Join(dir, worktree.SanitizeName(r.name)+"-"+r.stamp+".log")
		} else if !filepath.IsAbs(path) {
			base := o.BaseDir
			if base == "" {
				base, _ = os.Getwd()
			}
			path = filepath.Join(base, path)
		}
	}
	l, err := runlog.Open(runlog.Options{Run: r.name, Mode: mode, Path: path, Terminal: o.Logging.Terminal})
	if err != nil {
		return err
	}
	r.progress = l
	return nil
}

// run does the setup, the iterations and the teardown.
func (r *runner) run(ctx context.Context) (_ *Result, err error) {
	o := r.opts
	r.stamp = worktree.Stamp(r.start)
	r.res = &Result{Name: r.name}
	if err := r.openLog(); err != nil {
		return nil, r.configErr(fmt.Errorf("opening the run log: %w", err), "")
	}
	r.res.LogFile = r.progress.Path()
	r.progress.Info("run %s: agent %s, sandbox %s (%s), strategy %s, up to %d iteration(s)",
		r.name, r.agentAddr(), r.sandboxAddr(), r.caps.Contract, r.plan.Type, o.MaxIterations)
	for _, w := range r.tpl.Warnings {
		r.progress.Warn("%s", w)
	}

	var runErr *RunError
	defer func() {
		if e := r.teardown(ctx, runErr); runErr == nil {
			runErr = e
		}
		r.checkRefs(ctx)
		r.res.Elapsed = time.Since(r.start)
		var summaryErr error
		if runErr != nil {
			summaryErr = runErr
		}
		r.progress.Summary(runlog.Summary{
			Iterations: len(r.res.Iterations), MaxIterations: o.MaxIterations, Signal: r.res.CompletionSignal,
			Commits: len(r.res.Commits), Branch: r.res.Branch, Usage: r.res.Usage(), Elapsed: r.res.Elapsed,
			Preserved: r.res.PreservedWorktreePath, PatchPath: r.res.PatchPath, Err: summaryErr,
		})
		if runErr != nil {
			runErr.Branch, runErr.Commits = r.res.Branch, r.res.Commits
			runErr.PreservedWorktree, runErr.PatchPath, runErr.LogFile = r.res.PreservedWorktreePath, r.res.PatchPath, r.res.LogFile
			r.progress.Error("%v", runErr)
			err = runErr
		}
		r.progress.Close()
	}()

	if runErr = r.setup(ctx); runErr != nil {
		return r.res, runErr
	}
	if err := r.prepareResume(ctx); err != nil {
		runErr = r.fail(ctx, PhaseAgent, r.agentAddr(), 1, fmt.Errorf("copying session %s into the sandbox: %w", o.ResumeSession, err), "")
		return r.res, runErr
	}
	runErr = r.iterate(ctx)
	return r.res, nil
}

// setup prepares the workspace and the sandbox.
func (r *runner) setup(ctx context.Context) *RunError {
	o := r.opts
	ph := r.progress.Phase("Preparing " + string(r.plan.Type) + " workspace")
	ws, err := worktree.Prepare(ctx, r.repo, r.plan, worktree.PrepareOptions{RunName: r.name, Logger: r.log})
	ph.Done(err)
	if err != nil {
		hint := ""
		var le *worktree.LockedError
		if errors.As(err, &le) {
			hint = "wait for that run to finish, or use another branch"
		}
		return r.fail(ctx, PhaseWorktree, "", 0, err, hint)
	}
	r.ws = ws
	r.res.Branch = ws.Branch
	if ws.Dir != "" && ws.Dir != r.repo.Root {
		r.progress.Info("worktree %s on branch %s", ws.Dir, ws.Branch)
	} else {
		r.progress.Info("branch %s", orDetached(ws.Branch))
	}

	hostDir := ws.Dir
	if hostDir == "" {
		hostDir = r.repo.Root
	}
	if len(r.copyPaths) > 0 && r.plan.Worktree {
		ph := r.progress.Phase("Copying to worktree")
		skipped, err := worktree.CopyPaths(r.repo.Root, ws.Dir, r.copyPaths)
		ph.Done(err)
		if err != nil {
			return r.fail(ctx, PhaseCopy, "", 0, err, "check the copy_to_worktree paths")
		}
		r.skipped(skipped)
	}
	if err := r.hookPhase("Running host on_worktree_ready hooks", len(o.Hooks.HostOnWorktreeReady), func() error {
		return hooks.RunHost(ctx, hostDir, toHooks(o.Hooks.HostOnWorktreeReady), r.hookOutput)
	}); err != nil {
		return r.fail(ctx, PhaseHooks, "", 0, err, "fix the hook command (or raise its timeout) and run again")
	}

	r.snapshotRefs(ctx)
	ph = r.progress.Phase("Creating sandbox")
	req := sdk.CreateRequest{
		Config: o.Sandbox.Config, RunID: worktree.SanitizeName(r.name) + "-" + r.stamp, RunName: r.name,
		HostRepoPath: r.repo.Root, Env: r.sandboxEnv(ctx), Labels: r.labels(),
		HostUID: os.Getuid(), HostGID: os.Getgid(),
	}
	if r.caps.Contract == sdk.ContractBindMount {
		req.WorktreePath, req.GitMounts = ws.Dir, ws.GitMounts
	}
	req.Labels[sdk.LabelRun] = req.RunID
	sb, err := r.sandboxP.Create(ctx, req)
	ph.Done(err)
	if err != nil {
		return r.fail(ctx, PhaseSandbox, r.sandboxAddr(), 0, err, "")
	}
	r.sb = sb
	r.log.Debug("sandbox created", "id", sb.Info().ID, "repo", sb.Info().RepoPath)

	if r.caps.Contract == sdk.ContractIsolated {
		ph := r.progress.Phase("Syncing the repository into the sandbox")
		err := gitsync.SyncIn(ctx, sb, r.syncSpec())
		ph.Done(err)
		if err != nil {
			return r.fail(ctx, PhaseSyncIn, r.sandboxAddr(), 0, err, "")
		}
		r.syncedIn = true
		if len(r.copyPaths) > 0 {
			if err := r.copyIntoSandbox(ctx); err != nil {
				return r.fail(ctx, PhaseCopy, r.sandboxAddr(), 0, err, "check the copy_to_worktree paths")
			}
		}
	}

	n := len(o.Hooks.HostOnSandboxReady) + len(o.Hooks.SandboxOnSandboxReady)
	if err := r.hookPhase("Running on_sandbox_ready hooks", n, func() error {
		return hooks.RunParallel(ctx, hostDir, toHooks(o.Hooks.HostOnSandboxReady), sb, toHooks(o.Hooks.SandboxOnSandboxReady), r.hookOutput)
	}); err != nil {
		plugin := ""
		var he *hooks.Error
		if errors.As(err, &he) && he.Where == hooks.Sandbox {
			plugin = r.sandboxAddr()
		}
		return r.fail(ctx, PhaseHooks, plugin, 0, err, "fix the hook command (or raise its timeout) and run again")
	}
	return nil
}

func (r *runner) skipped(paths []string) {
	if len(paths) > 0 {
		r.progress.Warn("copy_to_worktree: not in the repo, skipped: %s", strings.Join(paths, ", "))
	}
}

func (r *runner) copyIntoSandbox(ctx context.Context) error {
	ph := r.progress.Phase("Copying to sandbox")
	sources, skipped, err := worktree.CopySources(r.repo.Root, r.copyPaths)
	if err == nil {
		for _, s := range sources {
			if err = r.sb.CopyIn(ctx, s.HostPath, s.Rel); err != nil {
				err = fmt.Errorf("copying %s into the sandbox: %w", s.Rel, err)
				break
			}
		}
	}
	ph.Done(err)
	r.skipped(skipped)
	return err
}

func (r *runner) hookPhase(title string, n int, run func() error) error {
	if n == 0 {
		return nil
	}
	ph := r.progress.Phase(title)
	err := run()
	ph.Done(err)
	return err
}

func (r *runner) hookOutput(where, command, line string) {
	r.progress.Output(where+" hook", line)
}

func toHooks(hs []Hook) []hooks.Hook {
	out := make([]hooks.Hook, len(hs))
	for i, h := range hs {
		out[i] = hooks.Hook{Command: h.Command, Timeout: h.Timeout, Sudo: h.Sudo}
	}
	return out
}

func (r *runner) syncSpec() gitsync.Spec {
	return gitsync.Spec{HostRepo: r.repo.Root, Branch: r.ws.Branch, Base: r.ws.Base, RunName: r.name}
}

// sandboxEnv is the resolved env plus what git needs in a bind-mounted
// worktree: the host's identity (the host's global git config is not
// mounted) and trust in a repository owned by another uid, both passed as
// env so no git config file is written. The run's own env wins.
func (r *runner) sandboxEnv(ctx context.Context) map[string]string {
	out := make(map[string]string, len(r.env)+6)
	if r.caps.Contract == sdk.ContractBindMount {
		name, _ := r.repo.Git(ctx, "config", "user.name")
		email, _ := r.repo.Git(ctx, "config", "user.email")
		for k, v := range map[string]string{
			"GIT_AUTHOR_NAME": name, "GIT_COMMITTER_NAME": name,
			"GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_EMAIL": email,
		} {
			if v != "" {
				out[k] = v
			}
		}
		if _, set := r.env["GIT_CONFIG_COUNT"]; !set {
			out["GIT_CONFIG_COUNT"], out["GIT_CONFIG_KEY_0"], out["GIT_CONFIG_VALUE_0"] = "1", "safe.directory", "*"
		}
	}
	for k, v := range r.env {
		out[k] = v
	}
	return out
}

func (r *runner) labels() map[string]string {
	l := map[string]string{
		sdk.LabelSandbox: r.sandboxAddr(),
		sdk.LabelPID:     fmt.Sprint(os.Getpid()),
		sdk.LabelRunName: r.name,
		sdk.LabelRepo:    r.repo.Root,
		sdk.LabelBranch:  r.ws.Branch,
		sdk.LabelBase:    r.ws.Base,
	}
	if r.opts.Version != "" {
		l[sdk.LabelVersion] = r.opts.Version
	}
	if h, err := os.Hostname(); err == nil {
		l[sdk.LabelHost] = h
	}
	return l
}

// runsAsRoot asks the sandbox whether commands run as uid 0 (agents such
// as Claude Code refuse to skip permissions as root without being told).
func (r *runner) runsAsRoot(ctx context.Context) bool {
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
