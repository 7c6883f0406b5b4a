package core

import (
	"fmt"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/internal/planning"
)

// optionsOf converts a decoded run block into RunOptions; defaults and
// checks are the planner's. base holds what the caller sets for every run.
func optionsOf(f *config.File, r *config.RunBlock, base RunOptions) (RunOptions, Diagnostics) {
	b := r.Body
	v := &planning.Values{Block: "run." + r.Label}
	str := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	o := base
	o.Name, o.BaseDir = r.Name(), f.Dir
	if o.Repo == "" {
		o.Repo = str(b.Repo)
	}
	o.Prompt, o.PromptFile, o.PromptArgs = str(b.Prompt), str(b.PromptFile), b.PromptArgs
	o.CopyToWorktree, o.Env, o.ShowEnv, o.ResumeSession = b.CopyToWorktree, b.Env, b.ShowEnv, str(b.ResumeSession)
	o.ForkSession = b.ForkSession != nil && *b.ForkSession
	o.NoSandbox = r.NoSandbox
	o.AllowUnconfined = b.AllowUnconfined != nil && *b.AllowUnconfined
	if b.MaxIterations != nil {
		if o.MaxIterations = *b.MaxIterations; o.MaxIterations < 1 {
			v.Diags = append(v.Diags, Diagnostic{Severity: Error, Block: v.Block, Attribute: "max_iterations", Summary: "Invalid max_iterations",
				Detail: fmt.Sprintf("max_iterations must be at least 1, got %d.", o.MaxIterations)})
		}
	}
	o.IdleTimeout = v.Duration("idle_timeout", b.IdleTimeout)
	o.CompletionTimeout = v.Duration("completion_timeout", b.CompletionTimeout)
	o.CompletionSignals = v.Signals(b.CompletionSignal)
	o.BranchStrategy = v.Strategy(b.BranchStrategy)
	o.Hooks = v.Hooks(b.Hooks)
	o.Output = v.Output(b.Output)
	if t := b.Timeouts; t != nil {
		o.Timeouts = Timeouts{
			Worktree: v.Duration("timeouts.worktree", t.Worktree), CreateSandbox: v.Duration("timeouts.create_sandbox", t.CreateSandbox),
			Hooks: v.Duration("timeouts.hooks", t.Hooks), SyncIn: v.Duration("timeouts.sync_in", t.SyncIn),
			SyncOut: v.Duration("timeouts.sync_out", t.SyncOut), Merge: v.Duration("timeouts.merge", t.Merge),
			Copy: v.Duration("timeouts.copy", t.Copy),
		}
	}
	if b.Logging != nil {
		o.Logging.Mode, o.Logging.Path = v.Logging(b.Logging)
	}
	if base.Logging.Mode != "" { // run --log
		o.Logging.Mode = base.Logging.Mode
	}
	return o, v.Diags
}
