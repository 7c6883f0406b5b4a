package execute

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/missingstudio/sanddune/core/internal/agentexec"
	"github.com/missingstudio/sanddune/core/internal/gitsync"
	"github.com/missingstudio/sanddune/core/internal/prompt"
	"github.com/missingstudio/sanddune/core/output"
	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// iterate runs the agent up to MaxIterations times in the run's sandbox,
// stopping at the first completion signal.
func (r *runner) iterate(ctx context.Context) *run.Error {
	target := r.HostBranch
	if target == "" {
		target = r.ws.TargetBranch
	}
	p := r.Prompt.Fill(r.ws.Branch, target, r.mergeArgs())
	ar := &agentexec.Runner{
		Agent: r.Agent.Provider, Config: r.Agent.Config, Sandbox: r.sb,
		Signals: r.CompletionSignals, IdleTimeout: r.IdleTimeout, CompletionTimeout: r.CompletionTimeout,
		RunsAsRoot: r.runsAsRoot(ctx), Confined: r.Caps.Confines, Env: r.execEnv(), Log: r.progress, Observe: r.observe,
	}
	stdout := agentexec.NewRing(run.MaxStdoutBytes)
	defer func() { r.res.Stdout = stdout.String() }()
	final := "" // the last iteration's output
	// Each iteration's session is captured while the next one runs; all
	// captures end before the output is read and before iterate returns,
	// or, in a run of its own (lateCaptures), before its sandbox is
	// removed: the last one then overlaps the teardown's sync and merge.
	captures := &sessionCaptures{}
	wait := func() { captures.wait(r.res.Iterations) }
	if r.lateCaptures {
		r.captures = captures
	} else {
		defer wait()
	}
	for n := 1; n <= r.MaxIterations; n++ {
		if ctx.Err() != nil {
			return r.fail(ctx, run.PhaseAgent, "", n, context.Cause(ctx), "")
		}
		if err := r.spent(n - 1); err != nil {
			return err
		}
		r.enter(run.PhaseAgent, n)
		r.progress.Info("iteration %d/%d", n, r.MaxIterations)
		text, err := r.renderPrompt(ctx, p)
		if err != nil {
			return r.fail(ctx, run.PhasePrompt, r.Sandbox.Address, n, err, "fix the shell expression in the prompt file, or what it needs in the sandbox")
		}
		resume, fork := "", false
		if n == 1 {
			resume, fork = r.ResumeSession, r.ForkSession
		}
		ph := r.progress.Phase(fmt.Sprintf("Running agent (iteration %d/%d)", n, r.MaxIterations))
		out, err := ar.Invoke(ctx, n, text, resume, fork)
		ph.Done(err)
		r.res.Iterations = append(r.res.Iterations, run.Iteration{SessionID: out.SessionID, Usage: out.Usage})
		for _, b := range r.Budgets {
			b.Spend(out.Usage)
		}
		sb := r.sb // the teardown clears r.sb while the last capture may still run
		captures.start(len(r.res.Iterations)-1, func() string { return r.captureSession(ctx, sb, out.SessionID) })
		if n > 1 && out.Output != "" && stdout.Len() > 0 {
			stdout.WriteString("\n")
		}
		stdout.WriteString(out.Output)
		final = out.Output
		if err != nil {
			phase, plugin := run.PhaseAgent, r.Agent.Address
			var sbErr *agentexec.SandboxExecError
			if errors.As(err, &sbErr) {
				phase, plugin = run.PhaseSandbox, r.Sandbox.Address
			}
			return r.fail(ctx, phase, plugin, n, err, agentHint(err))
		}
		if out.Signal != "" {
			r.res.CompletionSignal = out.Signal
			r.progress.Info("agent signalled completion (%s) after %d iteration(s)", out.Signal, n)
			return r.output(ctx, final, wait)
		}
	}
	r.progress.Info("reached max iterations (%d) without a completion signal", r.MaxIterations)
	return r.output(ctx, final, wait)
}

// spent is the error that stops the run, after iteration n, when one of
// its token budgets is spent; nil when none is.
func (r *runner) spent(n int) *run.Error {
	for _, b := range r.Budgets {
		if !b.Reached() {
			continue
		}
		err := &run.BudgetError{BudgetUsage: b.Usage(), After: n}
		hint := "raise token_budget and run again; the work so far is kept (see above)"
		if b.Scope != run.ScopeRun {
			hint = "raise the pipeline's token_budget and run again; the work so far is kept (see above)"
		}
		if r.progress != nil {
			r.progress.Warn("%v", err)
		}
		return &run.Error{Run: r.name, Phase: run.PhaseBudget, Iteration: n, Err: err, Hint: hint}
	}
	return nil
}

// output reads the run's structured output, when it asks for one, from
// the agent's final text (secret values redacted first), once the session
// captures ended (wait), whose paths its error names.
func (r *runner) output(ctx context.Context, final string, wait func()) *run.Error {
	if r.Output == nil {
		return nil
	}
	wait()
	v, err := r.Output.Extract(r.Redact.String(final))
	var oe *output.Error
	if !errors.As(err, &oe) {
		r.res.Output = v
		r.progress.Info("structured output %s read", r.Output.OpenTag())
		return nil
	}
	e := &run.OutputError{Tag: oe.Tag, Raw: oe.Raw, Cause: oe.Cause}
	if n := len(r.res.Iterations); n > 0 {
		e.SessionID, e.SessionFile = r.res.Iterations[n-1].SessionID, r.res.Iterations[n-1].SessionFilePath
	}
	hint := fmt.Sprintf("the agent reported no session to resume: run again, with a prompt that asks for %s…</%s>", r.Output.OpenTag(), oe.Tag)
	if e.SessionID != "" {
		hint = fmt.Sprintf("resume the agent's session to ask for corrected output, without redoing the work: "+
			"run it again with resume_session = %q and a prompt asking to re-emit %s…</%s> (the cause above)",
			e.SessionID, r.Output.OpenTag(), oe.Tag)
	}
	return r.fail(ctx, run.PhaseOutput, r.Agent.Address, len(r.res.Iterations), e, hint)
}

func agentHint(err error) string {
	var idle *run.IdleTimeoutError
	var exit *run.AgentExitError
	var agent *agentexec.StreamError
	switch {
	case errors.As(err, &idle):
		return "raise idle_timeout if the agent needs longer silent stretches, or check the agent's setup in the log"
	case errors.As(err, &agent):
		return "fix what the agent's message says (credentials, model, quota, network), then run again"
	case errors.As(err, &exit):
		return "read the agent's output above (and the log), fix the cause, and run again"
	case errors.Is(err, sdk.ErrSandboxGone):
		return "something outside sanddune removed or stopped the sandbox; the work so far is kept (see above): run again to continue in a new sandbox"
	case errors.Is(err, sdk.ErrPluginShutdown) && !errors.As(err, new(*agentexec.SandboxExecError)):
		return "the agent plugin's process was killed or crashed (its last log lines say why); the work so far is kept (see above): run again"
	}
	return "check the agent plugin and the sandbox"
}

func (r *runner) renderPrompt(ctx context.Context, p *prompt.Prompt) (string, error) {
	if len(p.Expressions()) == 0 {
		return p.Render(ctx, nil, prompt.RenderOptions{})
	}
	ph := r.progress.Phase("Expanding shell expressions")
	text, err := p.Render(ctx, r.sb, prompt.RenderOptions{
		Timeout: r.ExpressionTimeout,
		Expanded: func(expr string, size int) {
			r.progress.Output("expr", fmt.Sprintf("!`%s` → ~%d tokens", expr, (size+3)/4))
		},
	})
	ph.Done(err)
	return text, err
}

func (r *runner) observe(n int, e sdk.Event) {
	if r.OnEvent == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			r.log.Warn("event observer panicked; event dropped", "panic", p)
		}
	}()
	e.Text, e.ToolArg = r.Redact.String(e.Text), r.Redact.String(e.ToolArg)
	r.OnEvent(run.AgentEvent{Run: r.Name, Iteration: n, Time: time.Now(), Event: e})
}

// teardown brings the work home and releases everything, whatever
// happened. runErr is the run's failure so far; the result is a failure of
// teardown itself when the run had succeeded.
//
// Once an isolated sandbox's commits are synced out, the sandbox is
// removed while the merge and the worktree cleanup run; a bind-mounted
// worktree is cleaned up only once its sandbox is gone, so nothing still
// running there writes into it unseen; the host's refs are checked then
// too, while the worktree is cleaned up.
func (r *runner) teardown(ctx context.Context, runErr *run.Error) *run.Error {
	if r.ws == nil {
		return nil
	}
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), teardownTimeout+r.Timeouts.SyncOut+r.Timeouts.Merge)
	defer cancel()
	failed, remove := r.releaseSandbox(tctx)
	if runErr == nil {
		runErr = failed
	}
	removed := make(chan struct{})
	go func() {
		defer close(removed)
		if r.captures != nil {
			r.captures.ended() // in the sandbox still
		}
		remove()
	}()
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		<-removed
		r.checkRefs(tctx) // while the worktree is cleaned up
	}()
	e := r.closeWorktree(tctx, runErr, removed)
	<-removed
	<-checked
	if r.captures != nil {
		r.captures.wait(r.res.Iterations)
	}
	r.removed(tctx)
	if failed == nil {
		failed = e
	}
	return failed
}

// closeSandbox syncs the commits out of an isolated sandbox and removes
// it (see releaseSandbox).
func (r *runner) closeSandbox(tctx context.Context) *run.Error {
	failed, remove := r.releaseSandbox(tctx)
	remove()
	r.removed(tctx)
	return failed
}

// releaseSandbox syncs the commits out of an isolated sandbox and returns
// the removal of the sandbox, to run next (r.removed then says how it
// went); a sandbox whose sync-out failed is kept, and said so. When the
// sandbox plugin died, the run's resources are collected through it
// relaunched instead, before it returns.
func (r *runner) releaseSandbox(tctx context.Context) (failed *run.Error, remove func()) {
	sb, died := r.sb, r.sandboxDied
	r.sb, r.sandboxDied = nil, false
	none := func() {}
	switch {
	case died && sb == nil: // Create failed: it may have made one
		r.collect(tctx, "")
		return nil, none
	case sb == nil:
		return nil, none
	case died:
		r.collect(tctx, sb.Info().ID)
		return nil, none
	}
	var keep bool
	_, failed, keep = r.syncOut(tctx, sb, false)
	if failed != nil && pluginDied(failed.Err) {
		r.collect(tctx, sb.Info().ID)
		return failed, none
	}
	if keep {
		return failed, none
	}
	r.closing = sb
	return failed, func() { r.closeErr = sb.Close(tctx) }
}

// removed reports the removal releaseSandbox returned, once it ended: a
// plugin that died meanwhile is relaunched to collect the sandbox. The
// sandbox's egress watch ends with it, and its session directory goes.
func (r *runner) removed(tctx context.Context) {
	sb, err := r.closing, r.closeErr
	r.closing, r.closeErr = nil, nil
	r.dropSessionDir()
	r.stopEgress(tctx, sb != nil && err == nil)
	switch {
	case sb == nil:
	case pluginDied(err):
		r.collect(tctx, sb.Info().ID)
	case err != nil:
		r.progress.Warn("removing sandbox %s (%s) failed: %v; sanddune gc removes it", sb.Info().ID, r.Sandbox.Address, err)
	}
}

// syncOut brings an isolated sandbox's commits onto the host branch and
// saves its uncommitted work as a patch (unless commitsOnly: a later run
// in the sandbox continues it). keep is a failure that leaves the work
// only in the sandbox, which must then stay.
func (r *runner) syncOut(tctx context.Context, sb sdk.Sandbox, commitsOnly bool) (out gitsync.OutResult, failed *run.Error, keep bool) {
	if r.Caps.Contract != sdk.ContractIsolated || !r.syncedIn {
		return out, nil, false
	}
	r.enter(run.PhaseSyncOut, 0)
	ph := r.progress.Phase("Syncing commits out of the sandbox")
	spec := r.syncSpec()
	spec.CommitsOnly = commitsOnly
	err := within(tctx, "sync_out", r.Timeouts.SyncOut, func(ctx context.Context) (err error) {
		out, err = gitsync.SyncOut(ctx, sb, spec)
		return err
	})
	ph.Done(err)
	if out.PatchPath != "" {
		r.res.PatchPath = out.PatchPath
		r.progress.Warn("uncommitted work in the sandbox saved to %s (apply it with: git apply %s)", out.PatchPath, out.PatchPath)
	}
	var rescue *gitsync.RescueError
	switch {
	case errors.As(err, &rescue):
		r.res.Branch, r.res.Commits = rescue.RescueBranch, rescue.Commits
		return out, &run.Error{Run: r.name, Phase: run.PhaseSyncOut, Plugin: r.Sandbox.Address, Err: err}, false
	case err != nil:
		info := sb.Info()
		r.progress.Warn("sync-out failed; the sandbox %s is left in place so its work is not lost (repo at %s); remove it with sanddune gc once recovered", info.ID, info.RepoPath)
		return out, &run.Error{Run: r.name, Phase: run.PhaseSyncOut, Plugin: r.Sandbox.Address, Err: err,
			Hint: fmt.Sprintf("recover the work from sandbox %s (%s)", info.ID, info.RepoPath)}, true
	}
	if len(out.Commits) > 0 {
		r.sandboxBase = out.Head // on the host now: a later sync starts here
	}
	return out, nil, false
}

// closeWorktree merges (merge-to-head, when nothing failed), lists the
// commits and cleans the worktree up, preserving a dirty one; a worktree
// a sandbox mounts, once removed is closed. runErr is the failure so
// far; the result is a failure of this step.
func (r *runner) closeWorktree(tctx context.Context, runErr *run.Error, removed <-chan struct{}) *run.Error {
	var failed *run.Error
	merged := false
	if runErr == nil && r.Strategy.Type == worktree.StrategyMergeToHead {
		r.enter(run.PhaseMerge, 0)
		ph := r.progress.Phase("Merging into " + r.ws.TargetBranch)
		var mr *worktree.MergeResult
		err := within(tctx, "merge", r.Timeouts.Merge, func(ctx context.Context) (err error) {
			mr, err = r.ws.Merge(ctx)
			return err
		})
		ph.Done(err)
		var me *worktree.MergeError
		switch {
		case err == nil:
			merged = true
			r.res.Branch, r.res.Commits = mr.Target, mr.Commits
		case errors.As(err, &me):
			r.res.Commits = me.Commits
			failed = &run.Error{Run: r.name, Phase: run.PhaseMerge, Err: err} // its message says how to finish
		default:
			failed = &run.Error{Run: r.name, Phase: run.PhaseMerge, Err: err}
		}
	}
	if !merged && r.res.Commits == nil {
		cs, err := r.ws.Commits(tctx)
		if err != nil {
			r.progress.Warn("listing the run's commits failed: %v", err)
		}
		r.res.Commits = cs
	}

	r.enter(run.PhaseCleanup, 0)
	if r.Caps.Contract == sdk.ContractBindMount {
		<-removed
	}
	cr, err := r.ws.Close(tctx)
	if err != nil {
		r.progress.Warn("cleaning up the worktree: %v", err)
	}
	if cr.PreservedPath != "" {
		r.res.PreservedWorktreePath = cr.PreservedPath
		r.progress.Warn("the worktree has uncommitted changes and is preserved at %s (review: cd %s; discard: git worktree remove --force %s)",
			cr.PreservedPath, cr.PreservedPath, cr.PreservedPath)
	}
	if cr.KeptBranch != "" && merged && err == nil && cr.PreservedPath == "" {
		r.progress.Warn("branch %s is kept: it holds commits made after the merge (by something left running in the sandbox?)", cr.KeptBranch)
	}
	if cr.KeptBranch != "" && !merged {
		r.res.Branch = cr.KeptBranch
		if len(r.res.Commits) > 0 {
			r.progress.Warn("the run's %d commit(s) are kept on branch %s", len(r.res.Commits), cr.KeptBranch)
		}
	}
	if r.Strategy.Type == worktree.StrategyMergeToHead && r.res.Branch == r.ws.Branch && err == nil && cr.KeptBranch == "" {
		// The temporary branch is gone (nothing to keep): the host
		// branch is where the run's work is, if any.
		r.res.Branch = r.ws.TargetBranch
	}
	return failed
}
