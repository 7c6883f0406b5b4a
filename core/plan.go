// Package core is sanddune's engine, in two steps, the way Terraform
// (plan/apply) and Packer (Prepare/Run) are built:
//
//   - Plan checks everything that can be checked before anything starts,
//     once: it resolves and configures each provider block, asks each agent
//     provider to describe itself, and works out every run's branch
//     strategy, prompt, env layers and defaults. Every problem is a
//     Diagnostic naming the block and the attribute. Nothing is created.
//   - Execute runs a plan: the sandbox provider's preflight, then for each
//     run the worktree, the sandbox, the hooks, the iteration loop and the
//     teardown (core/internal/execute), which never loses commits or
//     uncommitted work and says where they are.
//
// `sanddune validate` is Plan without Execute, `sanddune run --dry-run`
// prints the plan. Library users call Run (PlanRun + Execute) with
// RunOptions built in Go.
package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/env"
	"github.com/missingstudio/sanddune/core/internal/execute"
	"github.com/missingstudio/sanddune/core/internal/planning"
	"github.com/missingstudio/sanddune/core/internal/schedule"
	"github.com/missingstudio/sanddune/core/prompt"
	"github.com/missingstudio/sanddune/core/redact"
	"github.com/missingstudio/sanddune/core/runlog"
	"github.com/missingstudio/sanddune/core/session"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// Plugins dispenses providers by plugin name: the plugin host
// (*pluginhost.Host).
type Plugins = planning.Plugins

// Diagnostic is one problem Plan found, naming the block and the
// attribute, and where it is in the config file when planned from one.
type Diagnostic = planning.Diagnostic

// Diagnostics are the problems Plan found; as an error, its errors.
type Diagnostics = planning.Diagnostics

// Severity says whether a diagnostic stops the plan.
type Severity = planning.Severity

// The severities.
const (
	Error   = planning.Error
	Warning = planning.Warning
)

// Config is what Plan plans from: a decoded config file, the plugins, and
// what the command line overrides.
type Config struct {
	File    *config.File
	Plugins Plugins
	// Run holds what every run gets from the caller rather than from its
	// block: Repo (overrides the blocks' repo when set), Logging.Mode
	// (overrides logging blocks when set), Logging.Terminal, OnEvent,
	// OnSandboxProgress, ExpressionTimeout, Logger and Version.
	Run RunOptions
	// Parallel is how many runs Execute runs at once; 0 means 1, or the
	// largest max_parallel of the pipelines the selected runs are in.
	// When runs may overlap, Plan refuses two that nothing orders and that
	// would work on one branch.
	Parallel int
}

// Selection says which runs Plan plans for execution.
type Selection struct {
	// Runs are run and session labels; none means every run, then every
	// session, in file order.
	Runs []string
	// Strict makes the problems of every block errors (validate).
	// Otherwise a problem of a block no selected run needs is a warning.
	Strict bool
	// Interactive plans the selected runs as interactive sessions on this
	// terminal (sanddune interactive); nil plans unattended runs.
	Interactive *Attachment
}

// RunPlan is a checked set of runs, ready for Execute.
type RunPlan struct {
	// Runs are the planned runs, dependencies first within a pipeline. A
	// run planned at run time (AtRunTime) shows its plan-time values.
	Runs []*PlannedRun
	// Diagnostics are the plan's warnings, and its errors when Plan failed.
	Diagnostics Diagnostics
	parallel    int
	nodes       []*node
}

// Plan checks the runs of a config file and plans the selected ones. It
// always returns a plan (so that its Diagnostics can be shown); the error,
// a Diagnostics, lists the errors.
func Plan(ctx context.Context, cfg Config, sel Selection) (*RunPlan, error) {
	f := cfg.File
	p := &planner{ctx: ctx, repos: planning.Repos{}}
	if r, ok := cfg.Plugins.(redactor); ok {
		p.redact = r.Redact // plugin logs hide the runs' secrets too
	}
	providers := planning.Providers{File: f, Plugins: cfg.Plugins}
	plan := &RunPlan{}
	selected := map[string]bool{}
	for _, name := range sel.Runs {
		if pl := f.Pipeline(name); pl != nil && sel.Interactive == nil {
			for _, ref := range pl.Runs {
				selected[ref.Label] = true
			}
			continue
		}
		if f.Run(name) == nil && (f.Session(name) == nil || sel.Interactive != nil) {
			var have []string
			for _, r := range f.Runs {
				have = append(have, r.Label)
			}
			if sel.Interactive == nil {
				for _, s := range f.Sessions {
					have = append(have, s.Label)
				}
				for _, p := range f.Pipelines {
					have = append(have, p.Label+" (pipeline)")
				}
			}
			return plan, Diagnostics{{Severity: Error, Summary: fmt.Sprintf("No run %q", name),
				Detail: fmt.Sprintf("%s has no run %q (runs: %s).", f.Path, name, strings.Join(have, ", "))}}
		}
		selected[name] = true
	}
	if sel.Interactive != nil && len(selected) != 1 && len(f.Runs) > 1 {
		return plan, Diagnostics{{Severity: Error, Summary: "Which run?",
			Detail: fmt.Sprintf("%s has %d run blocks: name the one to open as an interactive session.", f.Path, len(f.Runs))}}
	}
	if len(f.Runs) == 0 && len(f.Sessions) == 0 && !sel.Strict {
		return plan, Diagnostics{{Severity: Error, Summary: "No run blocks", Detail: f.Path + " has no run blocks."}}
	}
	needed := map[*config.ProviderBlock]bool{}
	for _, r := range f.Runs {
		if len(selected) == 0 || selected[r.Label] {
			needed[r.Sandbox], needed[r.Agent] = true, true
		}
	}
	for _, ss := range f.Sessions {
		if sel.Interactive == nil && (len(selected) == 0 || selected[ss.Label]) {
			needed[ss.Sandbox] = true
			for _, st := range ss.Steps {
				needed[st.Agent] = true
			}
		}
	}

	var diags Diagnostics
	demote := func(ds Diagnostics, wanted bool) Diagnostics {
		if sel.Strict || wanted {
			return ds
		}
		return ds.AsWarnings()
	}
	// Providers: each block once; a block no run uses is still checked.
	// The blocks are resolved at once, so their plugin processes start
	// concurrently; the diagnostics stay in file order.
	sbs, sbDiags := make([]*planning.Sandbox, len(f.Sandboxes)), make([]Diagnostics, len(f.Sandboxes))
	ags, agDiags := make([]*planning.Agent, len(f.Agents)), make([]Diagnostics, len(f.Agents))
	var wg sync.WaitGroup
	for i, b := range f.Sandboxes {
		wg.Go(func() { sbs[i], sbDiags[i] = providers.Sandbox(ctx, b) })
	}
	for i, b := range f.Agents {
		wg.Go(func() { ags[i], agDiags[i] = providers.Agent(ctx, b) })
	}
	wg.Wait()
	sandboxes := map[*config.ProviderBlock]SandboxRef{}
	agents := map[*config.ProviderBlock]AgentRef{}
	described := map[*config.ProviderBlock]*planning.Sandbox{}
	descs := map[*config.ProviderBlock]sdk.AgentDescription{}
	for i, b := range f.Sandboxes {
		if sb := sbs[i]; sb != nil {
			sandboxes[b] = SandboxRef{Address: b.Address, Plugin: b.Plugin, Provider: sb.Provider, Config: sb.Config}
			described[b] = sb
		}
		diags = append(diags, demote(sbDiags[i], needed[b])...)
	}
	for i, b := range f.Agents {
		if a := ags[i]; a != nil {
			agents[b] = AgentRef{Address: b.Address, Plugin: b.Plugin, Provider: a.Provider, Config: a.Config}
			descs[b] = a.Desc
		}
		diags = append(diags, demote(agDiags[i], needed[b])...)
	}

	graph, gds := planning.BuildGraph(f)
	for _, d := range gds {
		label, isRun := strings.CutPrefix(d.Block, "run.")
		diags = append(diags, demote(Diagnostics{d}, !isRun || len(selected) == 0 || selected[label])...)
	}
	if len(selected) > 0 {
		diags = append(diags, graph.CheckSelection(func(l string) bool { return selected[l] })...)
	}
	var expandMu sync.Mutex // plans at run time share the planner
	nodes := map[string]*node{}
	names := map[string]string{}
	for _, r := range f.Runs {
		wanted := len(selected) == 0 || selected[r.Label]
		addr := "run." + r.Label
		ds := planning.FromHCL(addr, r.Diags)
		if other, dup := names[r.Name()]; dup {
			ds = append(ds, Diagnostic{Severity: Error, Block: addr, Attribute: "name", Summary: "Duplicate run name",
				Detail: fmt.Sprintf("run %q is already named %q; run names must be unique (they name branches, worktrees and logs).", other, r.Name())})
		}
		names[r.Name()] = r.Label
		sb, sbOK := sandboxes[r.Sandbox]
		var sbCaps sdk.SandboxCapabilities
		var sbDesc sdk.SandboxDescription
		if d := described[r.Sandbox]; d != nil {
			sbCaps, sbDesc = d.Caps, d.Desc
		}
		if r.NoSandbox {
			sb, sbOK, sbCaps = SandboxRef{Address: planning.NoSandbox}, true, planning.NoSandboxCaps
		}
		ag, agOK := agents[r.Agent]
		n := &node{Label: r.Label, Addr: addr, Pipeline: graph.Pipeline[r.Label], ForEach: r.Pipeline.ForEach != nil}
		var runs []*PlannedRun
		if !ds.HasErrors() && sbOK && agOK {
			var ia *Attachment
			if wanted {
				ia = sel.Interactive
			}
			bp := &blockPlanner{p: p, f: f, r: r, base: cfg.Run, sb: sb, ag: ag, caps: sbCaps, sbDesc: sbDesc, desc: descs[r.Agent], ia: ia}
			var more Diagnostics
			runs, more = bp.instances()
			ds = append(ds, more...)
			if !r.Pipeline.Static() {
				n.Expand = bp.expand(&expandMu)
			}
		}
		for i := range ds {
			if ds[i].Subject == nil && ds[i].Block == addr {
				rng := r.AttrRange(ds[i].Attribute)
				ds[i].Subject = &rng
			}
		}
		diags = append(diags, demote(ds, wanted)...)
		if !wanted || ds.HasErrors() || runs == nil {
			continue
		}
		var needs []string
		for _, need := range graph.Needs[r.Label] {
			needs = append(needs, "run."+need.Label)
		}
		for _, pr := range runs {
			pr.DependsOn = needs
			if n.Pipeline != nil {
				pr.Pipeline = n.Pipeline.Label
			}
			if n.Expand != nil {
				pr.AtRunTime = true
				if r.Pipeline.ForEachDynamic {
					pr.ForEach = f.ExprText(r.Pipeline.ForEach)
				}
			}
		}
		if n.Expand == nil {
			n.Runs = runs
		}
		nodes[r.Label] = n
		plan.nodes = append(plan.nodes, n)
		plan.Runs = append(plan.Runs, runs...)
	}
	for _, n := range plan.nodes {
		for _, need := range graph.Needs[n.Label] {
			if nn := nodes[need.Label]; nn != nil {
				n.Needs = append(n.Needs, nn)
			}
		}
	}
	for _, ss := range f.Sessions {
		wanted := sel.Interactive == nil && (len(selected) == 0 || selected[ss.Label])
		pr, ds := p.session(f, ss, sandboxes, agents, described, descs, cfg.Run)
		if other, dup := names[ss.Name()]; dup {
			ds = append(ds, Diagnostic{Severity: Error, Block: "session." + ss.Label, Attribute: "name", Summary: "Duplicate run name",
				Detail: fmt.Sprintf("%q is already the name of run %q; run and session names must be unique (they name branches, worktrees and logs).", ss.Name(), other)})
		}
		names[ss.Name()] = ss.Label
		for i := range ds {
			if ds[i].Subject == nil && ds[i].Block == "session."+ss.Label {
				rng := ss.AttrRange(ds[i].Attribute)
				ds[i].Subject = &rng
			}
		}
		diags = append(diags, demote(ds, wanted)...)
		if wanted && pr != nil && !ds.HasErrors() {
			plan.Runs = append(plan.Runs, pr)
			plan.nodes = append(plan.nodes, &node{Label: ss.Label, Addr: "session." + ss.Label, Runs: []*PlannedRun{pr}})
		}
	}
	plan.parallel = schedule.Parallelism(cfg.Parallel, plan.nodes)
	diags = append(diags, checkParallel(f, graph, plan)...)
	plan.Diagnostics = diags
	if diags.HasErrors() {
		plan.Runs, plan.nodes = nil, nil
		return plan, diags.Errors()
	}
	return plan, nil
}

// PlanRun plans one run built in Go. Its providers are used as they are
// (configured by the caller). A failure is a *RunError of PhaseConfig.
func PlanRun(ctx context.Context, o RunOptions) (*RunPlan, error) {
	return planRun(ctx, o, nil)
}

// planRun plans one run built in Go, as an interactive session when ia is
// set.
func planRun(ctx context.Context, o RunOptions, ia *Attachment) (*RunPlan, error) {
	name := o.Name
	if name == "" {
		name = "run"
	}
	p := &planner{ctx: ctx, repos: planning.Repos{}}
	fail := func(ds Diagnostics) (*RunPlan, error) {
		return nil, &RunError{Run: name, Phase: PhaseConfig, Err: ds.Errors()}
	}
	if ctx.Err() != nil {
		return nil, &RunError{Run: name, Phase: PhaseConfig, Err: context.Cause(ctx), Cancelled: true}
	}
	if (o.Sandbox.Provider == nil && !o.NoSandbox) || o.Agent.Provider == nil {
		return fail(Diagnostics{{Severity: Error, Block: "run." + name, Summary: "A run needs a sandbox provider and an agent provider"}})
	}
	caps := planning.NoSandboxCaps
	var sbDesc sdk.SandboxDescription
	if o.NoSandbox {
		o.Sandbox = SandboxRef{Address: planning.NoSandbox}
	} else {
		info, err := o.Sandbox.Provider.Info(ctx)
		if err != nil {
			return nil, &RunError{Run: name, Phase: PhasePreflight, Plugin: o.Sandbox.Address, Err: err}
		}
		if info.Sandbox == nil {
			return fail(Diagnostics{{Severity: Error, Block: o.Sandbox.Address, Summary: "The plugin declares no sandbox capabilities"}})
		}
		caps = *info.Sandbox
		if sbDesc, err = o.Sandbox.Provider.Describe(ctx, o.Sandbox.Config); err != nil {
			return nil, &RunError{Run: name, Phase: PhasePreflight, Plugin: o.Sandbox.Address, Err: err}
		}
	}
	desc, err := o.Agent.Provider.Describe(ctx, o.Agent.Config)
	if err != nil {
		return nil, &RunError{Run: name, Phase: PhasePreflight, Plugin: o.Agent.Address, Err: err}
	}
	spec, ds := p.run("run."+name, o, caps, sbDesc, desc, ia)
	if ds.HasErrors() {
		return fail(ds)
	}
	return &RunPlan{Runs: []*PlannedRun{plannedRun(spec)}, Diagnostics: ds, parallel: 1}, nil
}

// planner checks runs; the runs of one repository share its state.
type planner struct {
	ctx   context.Context
	repos planning.Repos
	// redact, when set, learns each run's secrets (redactor).
	redact func(*redact.Redactor)
}

// redactor is a sink that hides the secrets of the runs planned: the
// plugin host, for what its plugins log.
type redactor interface{ Redact(*redact.Redactor) }

var runNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// run checks one run and works out everything Execute needs. Each check
// of a run lives here, once.
func (p *planner) run(block string, o RunOptions, caps sdk.SandboxCapabilities, sbDesc sdk.SandboxDescription, desc sdk.AgentDescription, ia *Attachment) (*execute.Spec, Diagnostics) {
	var diags Diagnostics
	fail := func(attr, summary string, err error) {
		diags = append(diags, Diagnostic{Severity: Error, Block: block, Attribute: attr, Summary: summary, Detail: err.Error(), Err: err})
	}
	s := &execute.Spec{
		Name: o.Name, Sandbox: o.Sandbox.Provider, SandboxAddr: o.Sandbox.Address, SandboxCfg: o.Sandbox.Config, Caps: caps,
		Agent: o.Agent.Provider, AgentAddr: o.Agent.Address, AgentCfg: o.Agent.Config, Desc: desc,
		CaptureSessions: session.CaptureEnabled(desc),
		Hooks:           o.Hooks, MaxIterations: o.MaxIterations, Signals: o.CompletionSignals,
		IdleTimeout: o.IdleTimeout, CompletionTimeout: o.CompletionTimeout, ExpressionTimeout: o.ExpressionTimeout,
		ResumeSession: o.ResumeSession, ForkSession: o.ForkSession,
		LogMode: o.Logging.Mode, LogPath: absPath(o.BaseDir, o.Logging.Path), Terminal: o.Logging.Terminal,
		Logger: o.Logger, Version: o.Version,
	}
	if o.NoSandbox {
		s.Sandbox = nil
	}
	s.Timeouts = o.Timeouts.WithDefaults()
	for _, t := range []struct {
		attr string
		d    time.Duration
	}{{"worktree", o.Timeouts.Worktree}, {"create_sandbox", o.Timeouts.CreateSandbox}, {"hooks", o.Timeouts.Hooks},
		{"sync_in", o.Timeouts.SyncIn}, {"sync_out", o.Timeouts.SyncOut}, {"merge", o.Timeouts.Merge}, {"copy", o.Timeouts.Copy}} {
		if t.d < 0 {
			fail("timeouts."+t.attr, "Invalid duration", fmt.Errorf("timeouts.%s must be positive", t.attr))
		}
	}
	s.Hooks = s.Hooks.WithTimeout(s.Timeouts.Hooks)
	if ia != nil {
		s.Interactive = &execute.Interactive{Attach: ia.Attach, Term: ia.Term}
	}
	diags = append(diags, planning.CheckBoundary(planning.Boundary{
		Block: block, SandboxAddr: o.Sandbox.Address, AgentAddr: o.Agent.Address, Caps: caps, Desc: desc,
		NoSandbox: o.NoSandbox, Interactive: ia != nil, AllowUnconfined: o.AllowUnconfined,
		SandboxHooks: len(o.Hooks.SandboxOnSandboxReady) > 0, Resume: o.ResumeSession != "",
	})...)
	if s.Name == "" {
		s.Name = "run"
	}
	if o.OnEvent != nil {
		name := s.Name
		s.OnEvent = func(n int, e sdk.Event) { o.OnEvent(AgentEvent{Run: name, Iteration: n, Time: time.Now(), Event: e}) }
	}
	if o.OnSandboxProgress != nil {
		name := s.Name
		s.OnSandboxProgress = func(p sdk.Progress) { o.OnSandboxProgress(SandboxProgress{Run: name, Time: time.Now(), Progress: p}) }
	}
	if s.MaxIterations == 0 {
		s.MaxIterations = DefaultMaxIterations
	}
	if len(s.Signals) == 0 {
		s.Signals = []string{DefaultCompletionSignal}
	}
	if s.IdleTimeout == 0 {
		s.IdleTimeout = DefaultIdleTimeout
	}
	if s.CompletionTimeout == 0 {
		s.CompletionTimeout = DefaultCompletionTimeout
	}

	if !runNameRE.MatchString(s.Name) || strings.Contains(s.Name, "..") || strings.HasSuffix(s.Name, ".lock") {
		fail("name", "Invalid run name", fmt.Errorf("%q cannot name a run: it becomes part of a branch and a directory name, so use letters, digits, '.', '_' and '-', starting with a letter or digit", s.Name))
	} else if err := runlog.CheckRunName(s.Name); err != nil {
		fail("name", "Run name too long", err)
	}
	if s.MaxIterations < 0 {
		fail("max_iterations", "Invalid max_iterations", fmt.Errorf("max_iterations must be at least 1, got %d", s.MaxIterations))
	}
	if s.IdleTimeout < 0 {
		fail("idle_timeout", "Invalid duration", errors.New("idle_timeout must be positive"))
	}
	if s.CompletionTimeout < 0 {
		fail("completion_timeout", "Invalid duration", errors.New("completion_timeout must be positive"))
	}
	if slices.Contains(s.Signals, "") {
		fail("completion_signal", "Empty completion signal", errors.New("an empty completion signal would match any output"))
	}
	if o.Prompt != "" && strings.TrimSpace(o.Prompt) == "" {
		fail("prompt", "Empty prompt", errors.New("the prompt is empty"))
	}
	for k := range o.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			fail("env", "Invalid env name", fmt.Errorf("%q is not a valid environment variable name", k))
		}
	}
	for _, h := range o.Hooks.SandboxOnSandboxReady {
		if h.Sudo && !caps.Sudo {
			fail("hooks", "Sandbox cannot run hooks with sudo", fmt.Errorf("a sandbox hook has sudo = true, but %s cannot run commands as root: remove sudo, or use a sandbox provider that supports it (e.g. docker)", o.Sandbox.Address))
			break
		}
	}
	for _, hs := range [][]Hook{o.Hooks.HostOnWorktreeReady, o.Hooks.HostOnSandboxReady, o.Hooks.SandboxOnSandboxReady} {
		for _, h := range hs {
			if strings.TrimSpace(h.Command) == "" {
				fail("hooks", "Empty hook command", errors.New("a hook needs a command"))
			}
		}
	}
	for _, c := range o.CopyToWorktree {
		clean, err := worktree.CheckRelPath(c)
		if err != nil {
			fail("copy_to_worktree", "Invalid copy_to_worktree path", err)
			continue
		}
		s.CopyPaths = append(s.CopyPaths, clean)
	}
	switch {
	case o.ForkSession && o.ResumeSession == "":
		fail("fork_session", "fork_session needs resume_session", errors.New("fork_session forks the session named by resume_session; set resume_session too"))
	case o.ResumeSession != "" && s.MaxIterations > 1:
		fail("resume_session", "resume_session needs max_iterations = 1",
			fmt.Errorf("a resumed session continues one conversation, so the run can have only one iteration; max_iterations is %d", s.MaxIterations))
	case o.ResumeSession != "":
		if err := session.CheckResume(desc, o.ForkSession); err != nil {
			fail("resume_session", "Cannot resume a session with this agent", fmt.Errorf("%s: %w", o.Agent.Address, err))
		}
	}
	promptAttr := "prompt"
	if o.PromptFile != "" {
		promptAttr = "prompt_file"
	}
	src := prompt.Source{Inline: o.Prompt, File: o.PromptFile, BaseDir: o.BaseDir, Args: o.PromptArgs, MergeArgs: o.mergeArgs}
	if ia != nil && ia.Ask != nil {
		// Checked here without asking; asked once everything else holds.
		src.Ask = func(string) (string, error) { return "", nil }
	}
	tpl, err := prompt.Load(src)
	if err != nil {
		fail(promptAttr, "Invalid prompt", err)
	}
	s.Prompt = tpl
	if o.Output != nil {
		out := *o.Output
		diags = append(diags, planning.CheckOutput(planning.OutputCheck{Block: block, Spec: &out, MaxIterations: s.MaxIterations,
			Prompt: tpl, PromptAttr: promptAttr, Interactive: ia != nil})...)
		s.Output = &out
	}

	repoDir := absPath(o.BaseDir, o.Repo)
	if repoDir == "" {
		repoDir = "."
	}
	rs := p.repos.Open(p.ctx, repoDir)
	if rs.Repo == nil {
		d := rs.Err
		d.Block = block
		return nil, append(diags, d)
	}
	s.Repo, s.HostBranch = rs.Repo, rs.HostBranch
	if s.Strategy, err = worktree.Resolve(o.BranchStrategy, caps.Contract, rs.HostBranch, len(s.CopyPaths) > 0); err != nil {
		var pe *worktree.PlanError
		attr := "branch_strategy"
		if errors.As(err, &pe) {
			attr = pe.Attribute
		}
		fail(attr, "Invalid branch strategy", err)
	}
	if o.ResumeSession != "" && desc.Sessions != nil {
		if _, err := session.FindHost(*desc.Sessions, rs.Repo.Root, "", o.ResumeSession); err != nil {
			fail("resume_session", "Session not found", err)
		}
	}
	if s.Env, err = env.Resolve(env.Layers{
		DotEnv: rs.DotEnv, Agent: desc.Env, Sandbox: sbDesc.Env, Run: o.Env, Required: desc.RequiredEnv,
	}); err != nil {
		fail("env", "Invalid env", err)
	}
	s.Redact = redact.New(secretEnv(s.Env, rs.DotEnv, o.Env, desc.RequiredEnv, o.ShowEnv))
	if p.redact != nil {
		p.redact(s.Redact)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	if src.Ask != nil {
		src.Ask = ia.Ask
		if s.Prompt, err = prompt.Load(src); err != nil {
			fail(promptAttr, "Invalid prompt", err)
			return nil, diags
		}
		tpl = s.Prompt
	}
	for _, w := range tpl.Warnings {
		diags = append(diags, Diagnostic{Severity: Warning, Block: block, Attribute: "prompt_args", Summary: "Unused prompt argument", Detail: w})
	}
	return s, diags
}

func absPath(base, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	if base == "" {
		base, _ = os.Getwd()
	}
	return filepath.Join(base, p)
}

// secretEnv is what of the resolved env is redacted in logs and output:
// the values of the credential keys, of .sanddune/.env and of the run's
// env, except the keys the run shows.
func secretEnv(resolved, dotEnv, runEnv map[string]string, credentials [][]string, show []string) map[string]string {
	out := map[string]string{}
	add := func(k string) {
		if v, ok := resolved[k]; ok && !slices.Contains(show, k) {
			out[k] = v
		}
	}
	for _, group := range credentials {
		for _, k := range group {
			add(k)
		}
	}
	for _, m := range []map[string]string{dotEnv, runEnv} {
		for k := range m {
			add(k)
		}
	}
	return out
}
