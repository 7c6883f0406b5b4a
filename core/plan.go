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
	"fmt"
	"strings"
	"sync"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/internal/planning"
	"github.com/missingstudio/sanddune/core/internal/schedule"
	"github.com/missingstudio/sanddune/core/redact"
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
	p := &planning.Planner{Ctx: ctx, Repos: planning.Repos{}}
	if r, ok := cfg.Plugins.(redactor); ok {
		p.Redact = r.Redact // plugin logs hide the runs' secrets too
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
	base := cfg.Run.options(nil)
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
			o := base
			if wanted {
				sel.Interactive.apply(&o)
			}
			useRefs(&o, sb, ag)
			bp := &blockPlanner{p: p, f: f, r: r, base: o, caps: sbCaps, sbDesc: sbDesc, desc: descs[r.Agent]}
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
		pr, ds := planSession(p, f, ss, sandboxes, agents, described, descs, base)
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
	p := &planning.Planner{Ctx: ctx, Repos: planning.Repos{}}
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
	spec, ds := p.Run("run."+name, o.options(ia), caps, sbDesc, desc)
	if ds.HasErrors() {
		return fail(ds)
	}
	return &RunPlan{Runs: []*PlannedRun{plannedRun(spec)}, Diagnostics: ds, parallel: 1}, nil
}

// redactor is a sink that hides the secrets of the runs planned: the
// plugin host, for what its plugins log.
type redactor interface{ Redact(*redact.Redactor) }
