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
	"github.com/missingstudio/sanddune/core/run"
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
	fp := &filePlanner{req: req, f: req.File, p: &planner{ctx: ctx, repos: Repos{}}, plan: &Plan{}, budgets: map[*config.PipelineBlock]*run.Budget{},
		interactive: req.Base.Interactive != nil, names: map[string]string{}}
	if r, ok := req.Plugins.(redactor); ok {
		fp.p.redact = r.Redact // plugin logs hide the runs' secrets too
	}
	if ds := fp.selection(); ds != nil {
		return fp.plan, ds
	}
	fp.providers(ctx)
	fp.graph()
	fp.runs()
	fp.sessions()
	plan := fp.plan
	plan.Parallel = schedule.Parallelism(req.Parallel, plan.Nodes)
	fp.diags = append(fp.diags, checkParallel(fp.f, fp.g, plan)...)
	plan.Diagnostics = once(fp.diags) // a repository's problem, not each run's
	if plan.Diagnostics.HasErrors() {
		plan.Runs, plan.Nodes = nil, nil
		return plan, plan.Diagnostics.Errors()
	}
	return plan, nil
}

// filePlanner plans the runs of one config file, in steps: the
// selection, the provider blocks, the graph, the run blocks, the session
// blocks.
type filePlanner struct {
	req         Request
	f           *config.File
	p           *planner
	plan        *Plan
	interactive bool
	// selected are the selected labels (none: every run and session);
	// needed the provider blocks they use.
	selected map[string]bool
	needed   map[*config.ProviderBlock]bool
	// sandboxes and agents are the provider blocks planned.
	sandboxes map[*config.ProviderBlock]*Sandbox
	agents    map[*config.ProviderBlock]*Agent
	g         *Graph
	// names are the run and session names taken, by label.
	names map[string]string
	// budgets are the pipelines' token budgets, made once per plan.
	budgets map[*config.PipelineBlock]*run.Budget
	diags   Diagnostics
}

// pipelineBudget is the token budget pl's runs share, nil for none.
func (fp *filePlanner) pipelineBudget(pl *config.PipelineBlock) *run.Budget {
	if pl == nil || pl.TokenBudget == 0 {
		return nil
	}
	if fp.budgets[pl] == nil {
		fp.budgets[pl] = run.NewBudget(fmt.Sprintf("pipeline %q", pl.Label), pl.TokenBudget)
	}
	return fp.budgets[pl]
}

// wanted says whether a block with label is selected.
func (fp *filePlanner) wanted(label string) bool {
	return len(fp.selected) == 0 || fp.selected[label]
}

// demote makes the problems of a block no selected run needs warnings,
// unless every problem is an error (Strict).
func (fp *filePlanner) demote(ds Diagnostics, wanted bool) Diagnostics {
	if fp.req.Strict || wanted {
		return ds
	}
	return ds.AsWarnings()
}

// selection reads the selected labels (a pipeline selects its runs) and
// the provider blocks they need; the error is a label the file lacks, or
// a file with nothing to run.
func (fp *filePlanner) selection() Diagnostics {
	f, interactive := fp.f, fp.interactive
	fp.selected = map[string]bool{}
	for _, name := range fp.req.Runs {
		if pl := f.Pipeline(name); pl != nil && !interactive {
			for _, ref := range pl.Runs {
				fp.selected[ref.Label] = true
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
			return Diagnostics{{Severity: Error, Summary: fmt.Sprintf("No run %q", name),
				Detail: fmt.Sprintf("%s has no run %q (runs: %s).", f.Path, name, strings.Join(have, ", "))}}
		}
		fp.selected[name] = true
	}
	if interactive && len(fp.selected) != 1 && len(f.Runs) > 1 {
		return Diagnostics{{Severity: Error, Summary: "Which run?",
			Detail: fmt.Sprintf("%s has %d run blocks: name the one to open as an interactive session.", f.Path, len(f.Runs))}}
	}
	if len(f.Runs) == 0 && len(f.Sessions) == 0 && !fp.req.Strict {
		return Diagnostics{{Severity: Error, Summary: "No run blocks", Detail: f.Path + " has no run blocks."}}
	}
	fp.needed = map[*config.ProviderBlock]bool{}
	for _, r := range f.Runs {
		if fp.wanted(r.Label) {
			fp.needed[r.Sandbox], fp.needed[r.Agent] = true, true
		}
	}
	for _, ss := range f.Sessions {
		if !interactive && fp.wanted(ss.Label) {
			fp.needed[ss.Sandbox] = true
			for _, st := range ss.Steps {
				fp.needed[st.Agent] = true
			}
		}
	}
	return nil
}

// providers plans each provider block once; a block no run uses is still
// checked. The blocks are resolved at once, so their plugin processes
// start concurrently; the diagnostics stay in file order.
func (fp *filePlanner) providers(ctx context.Context) {
	f := fp.f
	providers := Providers{File: f, Plugins: fp.req.Plugins}
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
	fp.sandboxes = map[*config.ProviderBlock]*Sandbox{}
	fp.agents = map[*config.ProviderBlock]*Agent{}
	for i, b := range f.Sandboxes {
		if sb := sbs[i]; sb != nil {
			fp.sandboxes[b] = sb
		}
		fp.diags = append(fp.diags, fp.demote(sbDiags[i], fp.needed[b])...)
	}
	for i, b := range f.Agents {
		if a := ags[i]; a != nil {
			fp.agents[b] = a
		}
		fp.diags = append(fp.diags, fp.demote(agDiags[i], fp.needed[b])...)
	}
}

// graph builds the pipeline graph and checks the selection against it.
func (fp *filePlanner) graph() {
	g, gds := BuildGraph(fp.f)
	for _, d := range gds {
		label, isRun := strings.CutPrefix(d.Block, "run.")
		fp.diags = append(fp.diags, fp.demote(Diagnostics{d}, !isRun || fp.wanted(label))...)
	}
	if len(fp.selected) > 0 {
		fp.diags = append(fp.diags, g.CheckSelection(func(l string) bool { return fp.selected[l] })...)
	}
	fp.g = g
}

// name takes a run or session name; a name taken already is an error.
func (fp *filePlanner) name(addr, name, label string) Diagnostics {
	other, dup := fp.names[name]
	fp.names[name] = label
	if !dup {
		return nil
	}
	return Diagnostics{{Severity: Error, Block: addr, Attribute: "name", Summary: "Duplicate run name",
		Detail: fmt.Sprintf("%q is already the name of %q; run and session names must be unique (they name branches, worktrees and logs).", name, other)}}
}

// runs plans each run block: the selected ones into the plan's graph,
// the others for their diagnostics.
func (fp *filePlanner) runs() {
	var expandMu sync.Mutex // plans at run time share the planner
	nodes := map[string]*Node{}
	for _, r := range fp.f.Runs {
		n, runs, ds := fp.run(r, &expandMu)
		wanted := fp.wanted(r.Label)
		fp.diags = append(fp.diags, fp.demote(ds, wanted)...)
		if !wanted || ds.HasErrors() || runs == nil {
			continue
		}
		nodes[r.Label] = n
		fp.plan.Nodes = append(fp.plan.Nodes, n)
		fp.plan.Runs = append(fp.plan.Runs, runs...)
	}
	for _, n := range fp.plan.Nodes {
		for _, need := range fp.g.Needs[n.Label] {
			if nn := nodes[need.Label]; nn != nil {
				n.Needs = append(n.Needs, nn)
			}
		}
	}
}

// stopsPlanning says whether a block's decoding problems keep its run from
// being checked further: an unknown attribute or block does not (it
// changes nothing else), so the run's other problems come in the same
// pass.
func stopsPlanning(ds Diagnostics) bool {
	for _, d := range ds {
		if d.Severity == Error && d.Summary != "Unsupported argument" && d.Summary != "Unsupported block type" {
			return true
		}
	}
	return false
}

// run plans one run block: its node of the graph and its instances.
func (fp *filePlanner) run(r *config.RunBlock, expandMu *sync.Mutex) (*Node, []*Planned, Diagnostics) {
	addr := "run." + r.Label
	ds := append(config.FromHCL(addr, r.Diags), fp.name(addr, r.Name(), r.Label)...)
	sb, sbOK := fp.sandboxes[r.Sandbox]
	sbAddr := ""
	var sbCaps sdk.SandboxCapabilities
	var sbDesc sdk.SandboxDescription
	if sbOK {
		sbAddr, sbCaps, sbDesc = r.Sandbox.Address, sb.Caps, sb.Desc
	}
	if r.NoSandbox {
		sb, sbOK, sbAddr, sbCaps = nil, true, NoSandbox, NoSandboxCaps
	}
	ag, agOK := fp.agents[r.Agent]
	n := &Node{Label: r.Label, Addr: addr, Pipeline: fp.g.Pipeline[r.Label], ForEach: r.Pipeline.ForEach != nil}
	var runs []*Planned
	if !stopsPlanning(ds) && sbOK && agOK {
		o := fp.req.Base
		if !fp.wanted(r.Label) {
			o.Interactive, o.Ask, o.Unselected = nil, nil, true
		}
		o.useSandbox(sbAddr, sb)
		o.useAgent(r.Agent, ag)
		o.PipelineBudget = fp.pipelineBudget(n.Pipeline)
		bp := &blockPlanner{p: fp.p, f: fp.f, r: r, base: o, caps: sbCaps, sbDesc: sbDesc, desc: ag.Desc}
		var more Diagnostics
		runs, more = bp.instances()
		ds = append(ds, more...)
		if !r.Pipeline.Static() {
			n.Expand = bp.expand(expandMu)
		}
	}
	locate(ds, addr, r.AttrRange)
	var needs []string
	for _, need := range fp.g.Needs[r.Label] {
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
				pr.ForEach = fp.f.ExprText(r.Pipeline.ForEach)
			}
		}
	}
	if n.Expand == nil {
		n.Runs = runs
	}
	return n, runs, ds
}

// sessions plans each session block; sessions are never interactive.
func (fp *filePlanner) sessions() {
	unattended := fp.req.Base
	unattended.Interactive, unattended.Ask = nil, nil
	for _, ss := range fp.f.Sessions {
		wanted := !fp.interactive && fp.wanted(ss.Label)
		addr := "session." + ss.Label
		pr, ds := fp.p.session(fp.f, ss, fp.sandboxes, fp.agents, unattended)
		ds = append(ds, fp.name(addr, ss.Name(), ss.Label)...)
		locate(ds, addr, ss.AttrRange)
		fp.diags = append(fp.diags, fp.demote(ds, wanted)...)
		if wanted && pr != nil && !ds.HasErrors() {
			fp.plan.Runs = append(fp.plan.Runs, pr)
			fp.plan.Nodes = append(fp.plan.Nodes, &Node{Label: ss.Label, Addr: addr, Runs: []*Planned{pr}})
		}
	}
}
