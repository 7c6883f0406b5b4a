package planning

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/internal/env"
	"github.com/missingstudio/sanddune/core/internal/execute"
	"github.com/missingstudio/sanddune/core/internal/prompt"
	"github.com/missingstudio/sanddune/core/internal/redact"
	"github.com/missingstudio/sanddune/core/internal/session"
	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/core/runlog"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/zclconf/go-cty/cty"
)

// Options is one run before its defaults and checks: core.RunOptions
// (run.Options), from Go or read from a run block (OptionsOf), and what
// the planner adds. Zero values take the defaults.
type Options struct {
	run.Options
	// MergeArgs makes BRANCHES and CONFLICTS prompt built-ins (a run block
	// with merge_branches).
	MergeArgs bool
	// Interactive, when set, makes the run an interactive session; Ask
	// then supplies the prompt arguments it lacks (nil leaves them an
	// error).
	Interactive *execute.Interactive
	Ask         func(key string) (string, error)
	// Unselected: the run is planned only to check the file; its
	// sandbox = "none" may be meant for `sanddune interactive`.
	Unselected bool
	// PipelineBudget is the token budget of the run's pipeline, shared
	// by its runs; nil for none.
	PipelineBudget *run.Budget
}

// useSandbox and useAgent make configured blocks o's providers; a nil
// sandbox is none (the host).
func (o *Options) useSandbox(addr string, sb *Sandbox) {
	o.Sandbox = run.SandboxRef{Address: addr}
	if sb != nil {
		o.Sandbox.Provider, o.Sandbox.Config, o.Sandbox.Restart, o.Sandbox.Egress = sb.Provider, sb.Config, sb.Restart, sb.Egress
	}
}

func (o *Options) useAgent(b *config.ProviderBlock, ag *Agent) {
	o.Agent = run.AgentRef{Address: b.Address, Plugin: b.Plugin, Provider: ag.Provider, Config: ag.Config}
}

// planner checks runs; the runs of one repository share its state.
type planner struct {
	ctx   context.Context
	repos Repos
	// redact, when set, learns each run's secrets: the plugin host, for
	// what its plugins log.
	redact func(*redact.Redactor)
}

var runNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// run checks one run and works out everything Execute needs, in one
// pass: each check of a run lives here, once, and none stops the others,
// so that every problem of the run is reported together.
func (p *planner) run(block string, o Options, caps sdk.SandboxCapabilities, sbDesc sdk.SandboxDescription, desc sdk.AgentDescription) (*execute.Spec, Diagnostics) {
	c := p.check(block, o, caps, sbDesc, desc)
	return c.spec(), c.diags
}

// check is run's pass, for a caller that tells its diagnostics apart
// (a session's steps).
func (p *planner) check(block string, o Options, caps sdk.SandboxCapabilities, sbDesc sdk.SandboxDescription, desc sdk.AgentDescription) *runCheck {
	c := &runCheck{p: p, block: block, o: o, caps: caps, sbDesc: sbDesc, desc: desc, byAgent: map[int]bool{}}
	c.defaults()
	c.values()
	c.prompt()
	c.repository()
	if !c.diags.HasErrors() {
		c.ask()
	}
	return c
}

// spec is the planned run, nil when the run has errors.
func (c *runCheck) spec() *execute.Spec {
	if c.diags.HasErrors() {
		return nil
	}
	return c.s
}

// runCheck is one run being checked: its options, what its providers
// said, the spec it becomes and the problems found.
type runCheck struct {
	p      *planner
	block  string
	o      Options
	caps   sdk.SandboxCapabilities
	sbDesc sdk.SandboxDescription
	desc   sdk.AgentDescription

	s     *execute.Spec
	src   prompt.Source
	diags Diagnostics
	// byAgent marks the diagnostics (by index) of the checks that read
	// the agent's description with values that are not the agent's: where
	// the agent runs, and the env it gets.
	byAgent map[int]bool
}

func (c *runCheck) fail(attr, summary string, err error) {
	c.diags = append(c.diags, Diagnostic{Severity: Error, Block: c.block, Attribute: attr, Summary: summary, Detail: err.Error(), Err: err})
}

// withAgent adds diagnostics of a check that reads the agent's
// description (byAgent).
func (c *runCheck) withAgent(ds ...Diagnostic) {
	for _, d := range ds {
		c.byAgent[len(c.diags)] = true
		c.diags = append(c.diags, d)
	}
}

// defaults makes the spec: the options' values, the defaults of those
// unset.
func (c *runCheck) defaults() {
	o := c.o
	s := &execute.Spec{Options: o.Options, Caps: c.caps, Desc: c.desc, CaptureSessions: session.CaptureEnabled(c.desc)}
	if o.NoSandbox {
		s.Sandbox.Provider, s.Sandbox.Restart = nil, nil
	}
	if o.Interactive != nil {
		ia := *o.Interactive
		s.Interactive = &ia
	}
	if s.Name == "" {
		s.Name = "run"
	}
	if s.MaxIterations == 0 {
		s.MaxIterations = run.DefaultMaxIterations
	}
	if len(s.CompletionSignals) == 0 {
		s.CompletionSignals = []string{run.DefaultCompletionSignal}
	}
	if s.IdleTimeout == 0 {
		s.IdleTimeout = run.DefaultIdleTimeout
	}
	if s.CompletionTimeout == 0 {
		s.CompletionTimeout = run.DefaultCompletionTimeout
	}
	s.Timeouts = o.Timeouts.WithDefaults()
	s.Hooks = o.Hooks.WithTimeout(s.Timeouts.Hooks)
	s.Logging.Path = absPath(o.BaseDir, o.Logging.Path)
	if o.TokenBudget > 0 {
		s.Budgets = append(s.Budgets, run.NewBudget(run.ScopeRun, o.TokenBudget))
	}
	if o.PipelineBudget != nil {
		s.Budgets = append(s.Budgets, o.PipelineBudget)
	}
	c.s = s
}

// values checks the values that need neither the prompt nor the
// repository. A value written in HCL that is not a positive duration or
// iteration count was refused when it was read (Values) and reaches this
// as unset: the checks here are those of values set in Go.
func (c *runCheck) values() {
	o, s := c.o, c.s
	durations := []run.TimeoutStep{{Name: "idle_timeout", Duration: &o.IdleTimeout}, {Name: "completion_timeout", Duration: &o.CompletionTimeout}}
	for _, st := range o.Timeouts.Steps() {
		durations = append(durations, run.TimeoutStep{Name: "timeouts." + st.Name, Duration: st.Duration})
	}
	for _, d := range durations {
		if *d.Duration < 0 {
			c.fail(d.Name, "Invalid duration", fmt.Errorf("%s must be positive", d.Name))
		}
	}
	c.withAgent(CheckBoundary(Boundary{
		Block: c.block, SandboxAddr: o.Sandbox.Address, AgentAddr: o.Agent.Address, Caps: c.caps, Desc: c.desc,
		NoSandbox: o.NoSandbox, Interactive: o.Interactive != nil || o.NoSandbox && o.Unselected, AllowUnconfined: o.AllowUnconfined,
		SandboxHooks: len(o.Hooks.SandboxOnSandboxReady) > 0, Resume: o.ResumeSession != "",
	})...)
	if !runNameRE.MatchString(s.Name) || strings.Contains(s.Name, "..") || strings.HasSuffix(s.Name, ".lock") {
		c.fail("name", "Invalid run name", fmt.Errorf("%q cannot name a run: it becomes part of a branch and a directory name, so use letters, digits, '.', '_' and '-', starting with a letter or digit", s.Name))
	} else if err := runlog.CheckRunName(s.Name); err != nil {
		c.fail("name", "Run name too long", err)
	}
	if s.MaxIterations < 0 {
		c.fail("max_iterations", "Invalid max_iterations", fmt.Errorf("max_iterations must be at least 1, got %d", s.MaxIterations))
	}
	if o.TokenBudget < 0 {
		c.fail("token_budget", "Invalid token_budget", fmt.Errorf("token_budget must be at least 1, got %d", o.TokenBudget))
	}
	if slices.Contains(s.CompletionSignals, "") {
		c.fail("completion_signal", "Empty completion signal", errors.New("an empty completion signal would match any output"))
	}
	if o.Prompt != "" && strings.TrimSpace(o.Prompt) == "" {
		c.fail("prompt", "Empty prompt", errors.New("the prompt is empty"))
	}
	c.hooks()
	c.egressPolicy()
	for _, p := range o.CopyToWorktree {
		clean, err := worktree.CheckRelPath(p)
		if err != nil {
			c.fail("copy_to_worktree", "Invalid copy_to_worktree path", err)
			continue
		}
		s.CopyPaths = append(s.CopyPaths, clean)
	}
	switch {
	case o.ForkSession && o.ResumeSession == "":
		c.fail("fork_session", "fork_session needs resume_session", errors.New("fork_session forks the session named by resume_session; set resume_session too"))
	case o.ResumeSession != "" && s.MaxIterations > 1:
		c.fail("resume_session", "resume_session needs max_iterations = 1",
			fmt.Errorf("a resumed session continues one conversation, so the run can have only one iteration; max_iterations is %d", s.MaxIterations))
	case o.ResumeSession != "":
		if err := session.CheckResume(c.desc, o.ForkSession); err != nil {
			c.fail("resume_session", "Cannot resume a session with this agent", fmt.Errorf("%s: %w", o.Agent.Address, err))
		}
	}
}

// hooks checks each hook at its own attributes (run.Hooks.Path).
func (c *runCheck) hooks() {
	for _, h := range c.o.Hooks.All() {
		if strings.TrimSpace(h.Command) == "" {
			c.fail(h.Path+".command", "Empty hook command", errors.New("a hook needs a command"))
		}
		if h.Sudo && !c.caps.Sudo {
			c.fail(h.Path+".sudo", "Sandbox cannot run hooks with sudo", fmt.Errorf("this sandbox hook has sudo = true, but %s cannot run commands as root: remove sudo, or use a sandbox provider that supports it (e.g. docker)", c.o.Sandbox.Address))
		}
	}
}

// promptAttr is the attribute the prompt comes from.
func (c *runCheck) promptAttr() string {
	if c.o.PromptFile != "" {
		return "prompt_file"
	}
	return "prompt"
}

// prompt loads the prompt (an interactive session's missing arguments
// are asked for once every check holds: ask) and checks the structured
// output it asks for.
func (c *runCheck) prompt() {
	o := c.o
	c.src = prompt.Source{Inline: o.Prompt, File: o.PromptFile, BaseDir: o.BaseDir, Args: o.PromptArgs, MergeArgs: o.MergeArgs,
		Optional: o.Interactive != nil}
	if o.Interactive != nil && o.Ask != nil {
		c.src.Ask = func(string) (string, error) { return "", nil }
	}
	tpl, err := prompt.Load(c.src)
	if err != nil {
		c.fail(c.promptAttr(), "Invalid prompt", err)
	}
	c.s.Prompt = tpl
	if o.Output != nil {
		out := *o.Output
		c.diags = append(c.diags, CheckOutput(OutputCheck{Block: c.block, Spec: &out, MaxIterations: c.s.MaxIterations,
			Prompt: tpl, PromptAttr: c.promptAttr(), Interactive: o.Interactive != nil})...)
		c.s.Output = &out
	}
}

// repository resolves what depends on the run's repository: the branch
// strategy, the session to resume and the env layers. Without a
// repository the strategy and the env are checked all the same.
func (c *runCheck) repository() {
	o, s := c.o, c.s
	repoDir := absPath(o.BaseDir, o.Repo)
	if repoDir == "" {
		repoDir = "."
	}
	rs := c.p.repos.Open(c.p.ctx, repoDir)
	var err error
	if rs.Repo == nil {
		d := rs.Err
		d.Block = c.block
		c.diags = append(c.diags, d)
		if err := worktree.CheckStrategy(o.BranchStrategy, c.caps.Contract, len(s.CopyPaths) > 0); err != nil {
			c.fail(strategyAttr(err), "Invalid branch strategy", err)
		}
	} else {
		s.Repo, s.HostBranch = rs.Repo, rs.HostBranch
		if s.Strategy, err = worktree.Resolve(o.BranchStrategy, c.caps.Contract, rs.HostBranch, len(s.CopyPaths) > 0); err != nil {
			c.fail(strategyAttr(err), "Invalid branch strategy", err)
		}
		if o.ResumeSession != "" && c.desc.Sessions != nil {
			if _, err := session.FindHost(c.p.ctx, o.Agent.Provider, *c.desc.Sessions, rs.Repo.Root, "", o.ResumeSession); err != nil {
				c.fail("resume_session", "Session not found", err)
			}
		}
	}
	// The run's own entries are checked here, the merged env by Resolve:
	// what an entry of the run cannot be is reported once, whatever agent.
	runEnv, ds := envEntries(c.block, "env", o.Env)
	c.diags = append(c.diags, ds...)
	if s.Env, err = env.Resolve(env.Layers{
		DotEnv: rs.DotEnv, Agent: c.desc.Env, Sandbox: c.sbDesc.Env, Run: runEnv, Required: c.desc.RequiredEnv,
	}); err != nil {
		c.withAgent(Diagnostic{Severity: Error, Block: c.block, Attribute: "env", Summary: "Invalid env", Detail: err.Error(), Err: err})
	}
	s.Redact = redact.New(secretEnv(s.Env, c.desc.RequiredEnv, o.ShowEnv, rs.DotEnv, c.desc.Env, c.sbDesc.Env, o.Env))
	if c.p.redact != nil {
		c.p.redact(s.Redact)
	}
}

// envEntries checks the entries of a run's (or a step's) own env at attr:
// a name that is no variable name at attr, a value no process can be
// given at attr.<name>. It returns the entries that pass.
func envEntries(block, attr string, vars map[string]string) (map[string]string, Diagnostics) {
	valid := map[string]string{}
	var ds Diagnostics
	for _, k := range env.Keys(vars) {
		p, ofName := env.Problem(k, vars[k])
		if p == "" {
			valid[k] = vars[k]
			continue
		}
		at := attr
		if !ofName {
			at += "." + k
		}
		err := &env.InvalidError{Problems: []string{p}}
		ds = append(ds, Diagnostic{Severity: Error, Block: block, Attribute: at, Summary: "Invalid env", Detail: err.Error(), Err: err})
	}
	return valid, ds
}

// ask loads an interactive session's prompt again, asking for the
// arguments it lacks, and warns of the arguments the prompt does not use.
func (c *runCheck) ask() {
	if c.src.Ask != nil {
		c.src.Ask = c.o.Ask
		tpl, err := prompt.Load(c.src)
		if err != nil {
			c.fail(c.promptAttr(), "Invalid prompt", err)
			return
		}
		c.s.Prompt = tpl
	}
	for _, w := range c.s.Prompt.Warnings {
		c.diags = append(c.diags, Diagnostic{Severity: Warning, Block: c.block, Attribute: "prompt_args", Summary: "Unused prompt argument", Detail: w})
	}
}

// strategyAttr is the attribute a branch strategy's error is at.
func strategyAttr(err error) string {
	var pe *worktree.PlanError
	if errors.As(err, &pe) {
		return pe.Attribute
	}
	return "branch_strategy"
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
// the values of the credential keys and of every env layer (.sanddune/.env,
// the agent's and the sandbox's blocks, the run's), except the keys the
// run shows.
func secretEnv(resolved map[string]string, credentials [][]string, show []string, layers ...map[string]string) map[string]string {
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
	for _, m := range layers {
		for k := range m {
			add(k)
		}
	}
	return out
}

// OptionsOf converts a decoded run block into Options; defaults and checks
// are planner.run's. base holds what the caller sets for every run. A
// value it cannot read is reported in its diagnostics and left unset, so
// that planner.run checks the rest of the run without reporting it again.
func OptionsOf(f *config.File, r *config.RunBlock, base Options) (Options, Diagnostics) {
	b := r.Body
	v := &Values{Block: "run." + r.Label}
	o := base
	o.Name, o.BaseDir, o.NoSandbox = r.Name(), f.Dir, r.NoSandbox
	v.workspace(&o, b.Repo, b.BranchStrategy, b.CopyToWorktree, b.Env, b.AllowUnconfined, b.Hooks, b.Logging, b.Timeouts)
	v.loop(&o, b.Prompt, b.PromptFile, b.PromptArgs, b.MaxIterations, b.CompletionSignal, b.IdleTimeout, b.CompletionTimeout, b.Output)
	o.TokenBudget = v.TokenBudget(b.TokenBudget)
	o.ShowEnv, o.ResumeSession = b.ShowEnv, str(b.ResumeSession)
	o.ForkSession = b.ForkSession != nil && *b.ForkSession
	return o, v.Diags
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// workspace reads what a run block and a session say about the
// repository, the worktree, the env, the hooks, the log and the
// timeouts into o. The repo and the log mode that o has (from the
// command line) win.
func (v *Values) workspace(o *Options, repo *string, strategy cty.Value, copyPaths []string, env map[string]string, allowUnconfined *bool,
	h *config.HooksBlock, l *config.LoggingBlock, t *config.TimeoutsBlock) {
	if o.Repo == "" {
		o.Repo = str(repo)
	}
	o.BranchStrategy = v.Strategy(strategy)
	o.CopyToWorktree, o.Env = copyPaths, env
	o.AllowUnconfined = allowUnconfined != nil && *allowUnconfined
	o.Hooks = v.Hooks(h)
	if t != nil {
		o.Timeouts = v.Timeouts(t)
	}
	if l != nil {
		mode, path := v.Logging(l)
		o.Logging.Path = path
		if o.Logging.Mode == "" { // else run --log
			o.Logging.Mode = mode
		}
	}
}

// loop reads what a run block and a session's step say about the prompt
// and the agent's loop into o.
func (v *Values) loop(o *Options, prompt, promptFile *string, args map[string]string, maxIterations *int, signal cty.Value,
	idle, completion *string, out *config.OutputBlock) {
	o.Prompt, o.PromptFile, o.PromptArgs = str(prompt), str(promptFile), v.promptArgs(args)
	if n := maxIterations; n != nil && *n < 1 { // read as unset: reported once, here
		v.bad("max_iterations", "Invalid max_iterations", "max_iterations must be at least 1, got %d.", *n)
	} else if n != nil {
		o.MaxIterations = *n
	}
	o.IdleTimeout = v.Duration("idle_timeout", idle)
	o.CompletionTimeout = v.Duration("completion_timeout", completion)
	o.CompletionSignals = v.Signals(signal)
	o.Output = v.Output(out)
}

// TokenBudget reads a token_budget attribute; one below 1 is reported
// here and read as unset.
func (v *Values) TokenBudget(n *int64) int64 {
	switch {
	case n == nil:
		return 0
	case *n < 1:
		v.bad("token_budget", "Invalid token_budget", "token_budget must be at least 1, got %d.", *n)
		return 0
	}
	return *n
}

// PlanRun plans one run built in Go (core.PlanRun), whose providers the
// caller configured. A failure is a *run.Error.
func PlanRun(ctx context.Context, o Options) (*Plan, error) {
	if o.Name == "" {
		o.Name = "run"
	}
	fail := func(ds Diagnostics) (*Plan, error) {
		return nil, &run.Error{Run: o.Name, Phase: run.PhaseConfig, Err: ds.Errors()}
	}
	if ctx.Err() != nil {
		return nil, &run.Error{Run: o.Name, Phase: run.PhaseConfig, Err: context.Cause(ctx), Cancelled: true}
	}
	if (o.Sandbox.Provider == nil && !o.NoSandbox) || o.Agent.Provider == nil {
		return fail(Diagnostics{{Severity: Error, Block: "run." + o.Name, Summary: "A run needs a sandbox provider and an agent provider"}})
	}
	if o.NoSandbox {
		o.useSandbox(NoSandbox, nil)
	}
	caps, sbDesc, err := describeSandbox(ctx, o)
	if err != nil {
		return nil, err
	}
	desc, err := o.Agent.Provider.Describe(ctx, o.Agent.Config)
	if err != nil {
		return nil, &run.Error{Run: o.Name, Phase: run.PhasePreflight, Plugin: o.Agent.Address, Err: err}
	}
	p := &planner{ctx: ctx, repos: Repos{}}
	spec, ds := p.run("run."+o.Name, o, caps, sbDesc, desc)
	if ds.HasErrors() {
		return fail(ds)
	}
	pr := planned(spec)
	return &Plan{Runs: []*Planned{pr}, Nodes: []*Node{{Label: pr.Name, Addr: "run." + pr.Name, Runs: []*Planned{pr}}}, Parallel: 1, Diagnostics: ds}, nil
}

// PlanEnv plans a worktree, or a sandbox in one (core.CreateWorktree,
// Worktree.CreateSandbox): a run without an agent.
func PlanEnv(ctx context.Context, o Options) (*execute.Spec, error) {
	o.Prompt = "-" // no agent, no prompt: the run checks still apply to the rest
	caps, sbDesc, err := describeSandbox(ctx, o)
	if err != nil {
		return nil, err
	}
	p := &planner{ctx: ctx, repos: Repos{}}
	spec, ds := p.run("run."+o.Name, o, caps, sbDesc, sdk.AgentDescription{})
	if ds.HasErrors() {
		return nil, &run.Error{Run: o.Name, Phase: run.PhaseConfig, Err: ds.Errors()}
	}
	return spec, nil
}

// describeSandbox asks a sandbox provider the caller configured for its
// capabilities and its description; none is the host's.
func describeSandbox(ctx context.Context, o Options) (sdk.SandboxCapabilities, sdk.SandboxDescription, error) {
	if o.Sandbox.Provider == nil {
		return NoSandboxCaps, sdk.SandboxDescription{}, nil
	}
	info, err := o.Sandbox.Provider.Info(ctx)
	if err != nil {
		return sdk.SandboxCapabilities{}, sdk.SandboxDescription{}, &run.Error{Run: o.Name, Phase: run.PhasePreflight, Plugin: o.Sandbox.Address, Err: err}
	}
	if info.Sandbox == nil {
		return sdk.SandboxCapabilities{}, sdk.SandboxDescription{}, &run.Error{Run: o.Name, Phase: run.PhaseConfig,
			Err: Diagnostics{{Severity: Error, Block: o.Sandbox.Address, Summary: "The plugin declares no sandbox capabilities"}}}
	}
	desc, err := o.Sandbox.Provider.Describe(ctx, o.Sandbox.Config)
	if err != nil {
		return sdk.SandboxCapabilities{}, sdk.SandboxDescription{}, &run.Error{Run: o.Name, Phase: run.PhasePreflight, Plugin: o.Sandbox.Address, Err: err}
	}
	if ds := CheckEgress(o.Sandbox.Address, o.Sandbox.Plugin, o.Sandbox.Egress, *info.Sandbox, o.Sandbox.Config, desc.EgressConflicts); ds.HasErrors() {
		return sdk.SandboxCapabilities{}, sdk.SandboxDescription{}, &run.Error{Run: o.Name, Phase: run.PhaseConfig, Err: ds}
	}
	return *info.Sandbox, desc, nil
}
