package planning

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/internal/execute"
	"github.com/missingstudio/sanddune/core/internal/redact"
	"github.com/missingstudio/sanddune/core/internal/schedule"
	"github.com/missingstudio/sanddune/sdk"
)

// Request is what PlanFile plans: the runs of a config file.
type Request struct {
	File    *config.File
	Plugins Plugins
	// Base holds what every run gets from the caller rather than from its
	// block; Base.Interactive plans the selected run as an interactive
	// session.
	Base Options
	// Parallel is how many runs execute at once (core.Config.Parallel).
	Parallel int
	// Runs are the selected run, session and pipeline labels; none means
	// every run and session. Strict makes the problems of every block
	// errors (validate).
	Runs   []string
	Strict bool
}

// Plan is a checked set of runs, ready to execute.
type Plan struct {
	// Runs are the planned runs, dependencies first within a pipeline.
	Runs []*Planned
	// Nodes are the graph the scheduler runs; Parallel its width.
	Nodes       []*Node
	Parallel    int
	Diagnostics Diagnostics
}

// Node is one run block (or session) of a plan's graph.
type Node = schedule.Node[*Planned]

// Planned is one planned run, or session (Steps).
type Planned struct {
	Name string
	// Spec is the run's, or a session's first step's.
	Spec  *execute.Spec
	Steps []execute.Step
	// Block is the run block's label ("" for a run built in Go or a
	// session); Key and KeyVal the for_each key of an instance.
	Block, Key string
	KeyVal     cty.Value
	// DependsOn, Pipeline, ForEach and AtRunTime are as in core.PlannedRun.
	DependsOn []string
	Pipeline  string
	ForEach   string
	AtRunTime bool
}

func planned(s *execute.Spec) *Planned { return &Planned{Name: s.Name, Spec: s} }

// redactor is a sink that hides the secrets of the runs planned: the
// plugin host, for what its plugins log.
type redactor interface{ Redact(*redact.Redactor) }

// PlanFile checks the runs of a config file and plans the selected ones
// (core.Plan). It always returns a plan (so that its Diagnostics can be
// shown); the error, a Diagnostics, lists the errors.
func PlanFile(ctx context.Context, req Request) (*Plan, error) {
	f, base := req.File, req.Base
	interactive := base.Interactive != nil
	p := &planner{ctx: ctx, repos: Repos{}}
	if r, ok := req.Plugins.(redactor); ok {
		p.redact = r.Redact // plugin logs hide the runs' secrets too
	}
	providers := Providers{File: f, Plugins: req.Plugins}
	plan := &Plan{}
	selected := map[string]bool{}
	for _, name := range req.Runs {
		if pl := f.Pipeline(name); pl != nil && !interactive {
			for _, ref := range pl.Runs {
				selected[ref.Label] = true
			}
			continue
		}
		if f.Run(name) == nil && (f.Session(name) == nil || interactive) {
			var have []string
			for _, r := range f.Runs {
				have = append(have, r.Label)
			}
			if !interactive {
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
	if interactive && len(selected) != 1 && len(f.Runs) > 1 {
		return plan, Diagnostics{{Severity: Error, Summary: "Which run?",
			Detail: fmt.Sprintf("%s has %d run blocks: name the one to open as an interactive session.", f.Path, len(f.Runs))}}
	}
	if len(f.Runs) == 0 && len(f.Sessions) == 0 && !req.Strict {
		return plan, Diagnostics{{Severity: Error, Summary: "No run blocks", Detail: f.Path + " has no run blocks."}}
	}
	needed := map[*config.ProviderBlock]bool{}
	for _, r := range f.Runs {
		if len(selected) == 0 || selected[r.Label] {
			needed[r.Sandbox], needed[r.Agent] = true, true
		}
	}
	for _, ss := range f.Sessions {
		if !interactive && (len(selected) == 0 || selected[ss.Label]) {
			needed[ss.Sandbox] = true
			for _, st := range ss.Steps {
				needed[st.Agent] = true
			}
		}
	}

	var diags Diagnostics
	demote := func(ds Diagnostics, wanted bool) Diagnostics {
		if req.Strict || wanted {
			return ds
		}
		return ds.AsWarnings()
	}
	// Providers: each block once; a block no run uses is still checked.
	// The blocks are resolved at once, so their plugin processes start
	// concurrently; the diagnostics stay in file order.
	sbs, sbDiags := make([]*Sandbox, len(f.Sandboxes)), make([]Diagnostics, len(f.Sandboxes))
	ags, agDiags := make([]*Agent, len(f.Agents)), make([]Diagnostics, len(f.Agents))
	var wg sync.WaitGroup
	for i, b := range f.Sandboxes {
		wg.Go(func() { sbs[i], sbDiags[i] = providers.Sandbox(ctx, b) })
	}
	for i, b := range f.Agents {
		wg.Go(func() { ags[i], agDiags[i] = providers.Agent(ctx, b) })
	}
	wg.Wait()
	sandboxes := map[*config.ProviderBlock]*Sandbox{}
	agents := map[*config.ProviderBlock]*Agent{}
	for i, b := range f.Sandboxes {
		if sb := sbs[i]; sb != nil {
			sandboxes[b] = sb
		}
		diags = append(diags, demote(sbDiags[i], needed[b])...)
	}
	for i, b := range f.Agents {
		if a := ags[i]; a != nil {
			agents[b] = a
		}
		diags = append(diags, demote(agDiags[i], needed[b])...)
	}

	graph, gds := BuildGraph(f)
	for _, d := range gds {
		label, isRun := strings.CutPrefix(d.Block, "run.")
		diags = append(diags, demote(Diagnostics{d}, !isRun || len(selected) == 0 || selected[label])...)
	}
	if len(selected) > 0 {
		diags = append(diags, graph.CheckSelection(func(l string) bool { return selected[l] })...)
	}
	var expandMu sync.Mutex // plans at run time share the planner
	nodes := map[string]*Node{}
	names := map[string]string{}
	for _, r := range f.Runs {
		wanted := len(selected) == 0 || selected[r.Label]
		addr := "run." + r.Label
		ds := config.FromHCL(addr, r.Diags)
		if other, dup := names[r.Name()]; dup {
			ds = append(ds, Diagnostic{Severity: Error, Block: addr, Attribute: "name", Summary: "Duplicate run name",
				Detail: fmt.Sprintf("run %q is already named %q; run names must be unique (they name branches, worktrees and logs).", other, r.Name())})
		}
		names[r.Name()] = r.Label
		sb, sbOK := sandboxes[r.Sandbox]
		sbAddr := ""
		var sbCaps sdk.SandboxCapabilities
		var sbDesc sdk.SandboxDescription
		if sbOK {
			sbAddr, sbCaps, sbDesc = r.Sandbox.Address, sb.Caps, sb.Desc
		}
		if r.NoSandbox {
			sb, sbOK, sbAddr, sbCaps = nil, true, NoSandbox, NoSandboxCaps
		}
		ag, agOK := agents[r.Agent]
		n := &Node{Label: r.Label, Addr: addr, Pipeline: graph.Pipeline[r.Label], ForEach: r.Pipeline.ForEach != nil}
		var runs []*Planned
		if !ds.HasErrors() && sbOK && agOK {
			o := base
			if !wanted {
				o.Interactive, o.Ask = nil, nil
			}
			o.useSandbox(sbAddr, sb)
			o.useAgent(r.Agent, ag)
			bp := &blockPlanner{p: p, f: f, r: r, base: o, caps: sbCaps, sbDesc: sbDesc, desc: ag.Desc}
			var more Diagnostics
			runs, more = bp.instances()
			ds = append(ds, more...)
			if !r.Pipeline.Static() {
				n.Expand = bp.expand(&expandMu)
			}
		}
		locate(ds, addr, r.AttrRange)
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
		plan.Nodes = append(plan.Nodes, n)
		plan.Runs = append(plan.Runs, runs...)
	}
	for _, n := range plan.Nodes {
		for _, need := range graph.Needs[n.Label] {
			if nn := nodes[need.Label]; nn != nil {
				n.Needs = append(n.Needs, nn)
			}
		}
	}
	unattended := base // sessions are never interactive
	unattended.Interactive, unattended.Ask = nil, nil
	for _, ss := range f.Sessions {
		wanted := !interactive && (len(selected) == 0 || selected[ss.Label])
		pr, ds := p.session(f, ss, sandboxes, agents, unattended)
		if other, dup := names[ss.Name()]; dup {
			ds = append(ds, Diagnostic{Severity: Error, Block: "session." + ss.Label, Attribute: "name", Summary: "Duplicate run name",
				Detail: fmt.Sprintf("%q is already the name of run %q; run and session names must be unique (they name branches, worktrees and logs).", ss.Name(), other)})
		}
		names[ss.Name()] = ss.Label
		locate(ds, "session."+ss.Label, ss.AttrRange)
		diags = append(diags, demote(ds, wanted)...)
		if wanted && pr != nil && !ds.HasErrors() {
			plan.Runs = append(plan.Runs, pr)
			plan.Nodes = append(plan.Nodes, &Node{Label: ss.Label, Addr: "session." + ss.Label, Runs: []*Planned{pr}})
		}
	}
	plan.Parallel = schedule.Parallelism(req.Parallel, plan.Nodes)
	diags = append(diags, checkParallel(f, graph, plan)...)
	diags = once(diags) // a repository's problem, not each run's
	plan.Diagnostics = diags
	if diags.HasErrors() {
		plan.Runs, plan.Nodes = nil, nil
		return plan, diags.Errors()
	}
	return plan, nil
}
