package planning

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/internal/execute"
	"github.com/missingstudio/sanddune/core/internal/schedule"
	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// blockPlanner plans a run block's instances, at plan time and at run
// time.
type blockPlanner struct {
	p *planner
	f *config.File
	r *config.RunBlock
	// base is the run's options but for the block's: its providers, and
	// the interactive session when planned as one.
	base   Options
	caps   sdk.SandboxCapabilities
	sbDesc sdk.SandboxDescription
	desc   sdk.AgentDescription
	// results are the run.<label> values when planning at run time; nil
	// at plan time.
	results map[string]cty.Value
}

// instance plans one instance of the block from its decoded body: each
// is nil without for_each.
func (bp *blockPlanner) instance(body config.RunBody, each *config.Each) (*Planned, Diagnostics) {
	r := *bp.r
	r.Body = body
	if each != nil && body.Name == nil {
		name := r.Label + "-" + worktree.SanitizeName(each.KeyString())
		r.Body.Name = &name
	}
	addr := "run." + r.Label
	o, ds := OptionsOf(bp.f, &r, bp.base)
	o.MergeArgs = r.Pipeline.MergeBranches != nil
	spec, more := bp.p.run(addr, o, bp.caps, bp.sbDesc, bp.desc)
	ds = append(ds, more...)
	if spec != nil && !ds.HasErrors() {
		ds = append(ds, bp.mergeBranches(&r, spec, each)...)
	}
	locate(ds, addr, bp.r.AttrRange)
	if spec == nil || ds.HasErrors() {
		return nil, ds
	}
	spec.BranchOf = resultOnBranch(bp.results, spec.Strategy.Branch)
	pr := planned(spec)
	pr.Block = r.Label
	if each != nil {
		pr.Key = each.KeyString()
		pr.KeyVal = each.Key
	}
	return pr, ds
}

// mergeBranches evaluates merge_branches into spec: known at plan time
// when static (the placeholder decoding leaves it unevaluated otherwise).
func (bp *blockPlanner) mergeBranches(r *config.RunBlock, spec *execute.Spec, each *config.Each) Diagnostics {
	expr := r.Pipeline.MergeBranches
	if expr == nil {
		if r.Body.OnMergeConflict != nil {
			return Diagnostics{{Severity: Error, Block: "run." + r.Label, Attribute: "on_merge_conflict", Summary: "on_merge_conflict without merge_branches",
				Detail: "on_merge_conflict says what a conflict of merge_branches does; set merge_branches too, or drop it."}}
		}
		return nil
	}
	bad := func(attr, summary, format string, args ...any) Diagnostics {
		return Diagnostics{{Severity: Error, Block: "run." + r.Label, Attribute: attr, Summary: summary, Detail: fmt.Sprintf(format, args...)}}
	}
	switch spec.Strategy.Type {
	case worktree.StrategyMergeToHead, worktree.StrategyBranch:
	default:
		return bad("branch_strategy", "merge_branches needs a worktree",
			`merge_branches merges into the run's own branch, before its agent starts: use branch_strategy "merge-to-head" or "branch", not %q.`, spec.Strategy.Type)
	}
	spec.OnMergeConflict = execute.ConflictToAgent
	if c := r.Body.OnMergeConflict; c != nil {
		switch execute.OnConflict(*c) {
		case execute.ConflictToAgent, execute.ConflictStop:
			spec.OnMergeConflict = execute.OnConflict(*c)
		default:
			return bad("on_merge_conflict", "Invalid on_merge_conflict", `on_merge_conflict is "agent" (the agent merges what conflicted) or "stop" (the run stops, every branch kept), got %q.`, *c)
		}
	}
	if bp.r.Pipeline.Dynamic["merge_branches"] && bp.results == nil {
		return nil // at run time
	}
	v, hd := bp.f.EvalExpr(expr, bp.results, each)
	if hd.HasErrors() {
		return config.FromHCL("run."+r.Label, hd)
	}
	var branches []string
	if v.IsNull() || !(v.Type().IsListType() || v.Type().IsTupleType() || v.Type().IsSetType()) {
		return bad("merge_branches", "Invalid merge_branches", "merge_branches is a list of branch names, such as [for r in run.implement : r.branch].")
	}
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			return bad("merge_branches", "Invalid merge_branches", "merge_branches is a list of branch names (strings).")
		}
		b := e.AsString()
		if err := worktree.CheckBranchName(b); err != nil {
			return bad("merge_branches", "Invalid branch in merge_branches", "%v.", err)
		}
		branches = append(branches, b)
	}
	spec.MergeBranches = branches
	return nil
}

// results, when set, are the run.<label> values of a run-time
func (bp *blockPlanner) withResults(results map[string]cty.Value) *blockPlanner {
	c := *bp
	c.results = results
	return &c
}

// instances plans every instance of the block at plan time: one, or one
// per element of a static for_each (each with its own values); a
// for_each known at run time only is planned once, as a placeholder.
func (bp *blockPlanner) instances() ([]*Planned, Diagnostics) {
	r := bp.r
	if r.Pipeline.ForEach == nil || r.Pipeline.ForEachDynamic {
		pr, ds := bp.instance(r.Body, nil)
		if pr == nil {
			return nil, ds
		}
		return []*Planned{pr}, ds
	}
	eaches, ds := bp.forEach(nil)
	if ds.HasErrors() {
		return nil, ds
	}
	// The block is checked whole with the first instance that decodes
	// (a problem in decoding with the first); every other instance
	// reports only the problems of what it evaluates differently: the
	// expressions that reference each, and the name it derives from its
	// key when the block sets none.
	varies := r.EachRanges()
	own := func(d Diagnostic) bool {
		return within(d.Subject, varies) || d.Attribute == "name" && r.Body.Name == nil
	}
	var out []*Planned
	checked := false
	for i := range eaches {
		body, hd := bp.f.PlanBody(r, &eaches[i])
		if hd.HasErrors() {
			for _, d := range config.FromHCL("run."+r.Label, hd) {
				if i == 0 || own(d) {
					ds = append(ds, d)
				}
			}
			continue
		}
		pr, more := bp.instance(body, &eaches[i])
		if pr != nil {
			out = append(out, pr)
		}
		for _, d := range append(config.FromHCL("run."+r.Label, hd), more...) {
			if !checked || own(d) {
				ds = append(ds, d)
			}
		}
		checked = true
	}
	if ds.HasErrors() {
		return nil, ds
	}
	return out, append(ds, checkInstances(r.Label, out)...)
}

// within reports whether rng lies inside one of the ranges.
func within(rng *hcl.Range, in []hcl.Range) bool {
	for _, r := range in {
		if rng != nil && rng.Filename == r.Filename && rng.Start.Byte >= r.Start.Byte && rng.End.Byte <= r.End.Byte {
			return true
		}
	}
	return false
}

// forEach evaluates for_each into its instances.
func (bp *blockPlanner) forEach(results map[string]cty.Value) ([]config.Each, Diagnostics) {
	addr := "run." + bp.r.Label
	v, hd := bp.f.EvalExpr(bp.r.Pipeline.ForEach, results, nil)
	if hd.HasErrors() {
		return nil, config.FromHCL(addr, hd)
	}
	eaches, err := config.ForEachInstances(v)
	if err != nil {
		rng := bp.r.AttrRange("for_each")
		return nil, Diagnostics{{Severity: Error, Block: addr, Attribute: "for_each", Summary: "Invalid for_each", Detail: err.Error() + ".", Subject: &rng}}
	}
	return eaches, nil
}

// checkInstances refuses instances of one for_each that share a name or
// a branch: they run at the same time.
func checkInstances(label string, runs []*Planned) Diagnostics {
	var diags Diagnostics
	names := map[string]string{}
	for _, r := range runs {
		if other, dup := names[r.Name]; dup {
			diags = append(diags, Diagnostic{Severity: Error, Block: "run." + label, Attribute: "name", Summary: "Duplicate run name",
				Detail: fmt.Sprintf("the for_each instances %s and %s are both named %q: use each.key or each.value in name.", other, r.Key, r.Name)})
		}
		names[r.Name] = r.Key
	}
	seen := map[string]string{}
	for _, r := range runs {
		key := BranchKey(r.Spec)
		if key == "" {
			continue
		}
		if other, dup := seen[key]; dup {
			diags = append(diags, Diagnostic{Severity: Error, Block: "run." + label, Attribute: "branch_strategy", Summary: "Branch collision",
				Detail: fmt.Sprintf("the for_each instances %q and %q both work on %s, and instances run at the same time: give each its own branch (from each.key or each.value).", other, r.Name, r.Spec.Strategy.Branch)})
			continue
		}
		seen[key] = r.Name
	}
	return diags
}

// expand plans the block's instances at run time with the results of the
// runs it needs. A problem is the run's error (PhasePlan).
func (bp *blockPlanner) expand(mu *sync.Mutex) func(context.Context, map[string]cty.Value) ([]*Planned, error) {
	return func(ctx context.Context, results map[string]cty.Value) ([]*Planned, error) {
		mu.Lock() // the planner's repository state is shared
		defer mu.Unlock()
		r := bp.r
		b := bp.withResults(results)
		fail := func(ds Diagnostics) ([]*Planned, error) {
			return nil, &run.Error{Run: r.Name(), Phase: run.PhasePlan, Err: ds.Errors(),
				Hint: "the values came from the runs it depends on (see their results); fix the config or their output, and run again"}
		}
		eaches := []*config.Each{nil}
		if r.Pipeline.ForEach != nil {
			es, ds := b.forEach(results)
			if ds.HasErrors() {
				return fail(ds)
			}
			eaches = eaches[:0]
			for i := range es {
				eaches = append(eaches, &es[i])
			}
		}
		var out []*Planned
		var ds Diagnostics
		for _, each := range eaches {
			body, hd := b.f.Eval(r, results, each)
			more := config.FromHCL("run."+r.Label, hd)
			if !more.HasErrors() {
				var pr *Planned
				pr, more = b.instance(body, each)
				if pr != nil {
					out = append(out, pr)
				}
			}
			ds = append(ds, more.Errors()...)
		}
		if len(eaches) > 0 && r.Pipeline.ForEach != nil {
			ds = append(ds, checkInstances(r.Label, out)...)
		}
		if ds.HasErrors() {
			return fail(ds)
		}
		return out, nil
	}
}

// checkParallel refuses two planned runs of different blocks that may
// run at once on one branch: nothing orders them and the parallelism
// lets them overlap. (Instances of one for_each are checked with their
// block.) A run whose branch is known at run time only is checked then.
func checkParallel(f *config.File, g *Graph, p *Plan) Diagnostics {
	type use struct {
		n  *Node
		pr *Planned
	}
	var uses []use
	for _, n := range p.Nodes {
		if n.Expand != nil {
			if r := f.Run(n.Label); r == nil || r.Pipeline.ForEachDynamic || r.Pipeline.Dynamic["branch_strategy"] {
				continue
			}
		}
		runs := n.Runs
		if n.Expand != nil {
			for _, pr := range p.Runs {
				if pr.Block == n.Label {
					runs = append(runs, pr)
				}
			}
		}
		for _, pr := range runs {
			uses = append(uses, use{n, pr})
		}
	}
	specs := make([]*execute.Spec, len(uses))
	for i, u := range uses {
		specs[i] = u.pr.Spec
	}
	ancestors := map[string]map[string]bool{}
	for _, n := range p.Nodes {
		ancestors[n.Label] = g.Ancestors(n.Label)
	}
	overlap := func(i, j int) bool {
		a, b := uses[i].n, uses[j].n
		if a == b || ancestors[a.Label][b.Label] || ancestors[b.Label][a.Label] {
			return false
		}
		width := p.Parallel
		if a.Pipeline != nil && a.Pipeline == b.Pipeline {
			width = min(width, schedule.MaxParallel(a.Pipeline))
		}
		return width > 1
	}
	return CheckParallel(specs, overlap, func(i int) string { return uses[i].n.Addr })
}

// resultOnBranch is the run (run.<label>) among results whose result is
// on branch, "" for none: a run planned from it continues its work there.
func resultOnBranch(results map[string]cty.Value, branch string) string {
	if branch == "" {
		return ""
	}
	var on func(v cty.Value) bool
	on = func(v cty.Value) bool {
		switch {
		case v.IsNull() || !v.IsKnown():
			return false
		case v.Type().IsObjectType() && v.Type().HasAttribute("branch") && v.Type().HasAttribute("commits"):
			b := v.GetAttr("branch")
			return b.Type() == cty.String && !b.IsNull() && b.AsString() == branch
		case v.CanIterateElements():
			for it := v.ElementIterator(); it.Next(); {
				if _, e := it.Element(); on(e) {
					return true
				}
			}
		}
		return false
	}
	for label, v := range results {
		if on(v) {
			return "run." + label
		}
	}
	return ""
}
