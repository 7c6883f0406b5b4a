package planning

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/missingstudio/sanddune/core/config"
)

// Graph is the DAG of a file's run blocks: each run's needs (depends_on
// and the runs its attributes reference) and the pipeline it belongs to.
type Graph struct {
	// Needs are each run's dependencies, by label, in order.
	Needs map[string][]config.RunRef
	// Pipeline is the pipeline block that lists a run, if any.
	Pipeline map[string]*config.PipelineBlock
	// Order is every run label, dependencies first (file order otherwise).
	Order []string
}

// BuildGraph checks the file's pipelines and dependencies: cycles, runs
// listed by two pipelines, and a pipeline's run that needs a run the
// pipeline does not list. Its diagnostics are errors at the offending
// reference.
func BuildGraph(f *config.File) (*Graph, Diagnostics) {
	g := &Graph{Needs: map[string][]config.RunRef{}, Pipeline: map[string]*config.PipelineBlock{}}
	var diags Diagnostics
	errAt := func(block string, rng hcl.Range, summary, format string, args ...any) {
		diags = append(diags, Diagnostic{Severity: Error, Block: block, Summary: summary, Detail: fmt.Sprintf(format, args...), Subject: rng.Ptr()})
	}
	for _, r := range f.Runs {
		g.Needs[r.Label] = r.Pipeline.Needs()
	}
	for _, p := range f.Pipelines {
		diags = append(diags, config.FromHCL("pipeline."+p.Label, p.Diags)...)
		for _, ref := range p.Runs {
			if other := g.Pipeline[ref.Label]; other != nil && other != p {
				errAt("pipeline."+p.Label, ref.Range, "Run in two pipelines",
					"run.%s is already in pipeline %q: a run belongs to one pipeline (its max_parallel applies to it).", ref.Label, other.Label)
				continue
			}
			g.Pipeline[ref.Label] = p
		}
	}
	for _, p := range f.Pipelines {
		listed := map[string]bool{}
		for _, ref := range p.Runs {
			listed[ref.Label] = true
		}
		for _, ref := range p.Runs {
			for _, need := range g.Needs[ref.Label] {
				if !listed[need.Label] {
					errAt("run."+ref.Label, need.Range, "Dependency outside the pipeline",
						"run.%s needs run.%s, which pipeline %q does not list: add run.%s to its runs.", ref.Label, need.Label, p.Label, need.Label)
				}
			}
		}
	}
	// Depth-first, in file order: a cycle is reported once, at the
	// reference that closes it.
	const (
		unseen = iota
		visiting
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(label string)
	visit = func(label string) {
		state[label] = visiting
		stack = append(stack, label)
		for _, need := range g.Needs[label] {
			switch state[need.Label] {
			case unseen:
				visit(need.Label)
			case visiting:
				i := len(stack) - 1
				for stack[i] != need.Label {
					i--
				}
				cycle := append(append([]string{}, stack[i:]...), need.Label)
				errAt("run."+label, need.Range, "Dependency cycle",
					"the runs depend on each other in a circle: run.%s; remove one of these dependencies.", strings.Join(cycle, " → run."))
			}
		}
		stack = stack[:len(stack)-1]
		state[label] = done
		g.Order = append(g.Order, label)
	}
	for _, r := range f.Runs {
		if state[r.Label] == unseen {
			visit(r.Label)
		}
	}
	return g, diags
}

// CheckSelection refuses selected runs that need a run that is not
// selected; its diagnostics are errors at the reference.
func (g *Graph) CheckSelection(selected func(label string) bool) Diagnostics {
	var diags Diagnostics
	for _, label := range g.Order {
		if !selected(label) {
			continue
		}
		for _, need := range g.Needs[label] {
			if selected(need.Label) {
				continue
			}
			summary, detail := "Dependency not selected", fmt.Sprintf("run.%s needs run.%s, which is not selected: select what it needs too (sanddune run %s) or the pipeline that lists them.", label, need.Label, strings.Join(g.withNeeds(label, selected), " "))
			if g.Ancestors(need.Label)[label] { // selecting both would not help
				summary, detail = "Dependency cycle", fmt.Sprintf("run.%s needs run.%s, which needs run.%s in turn: break the cycle by removing this reference, or the one that makes run.%s need run.%s.", label, need.Label, label, need.Label, label)
			}
			diags = append(diags, Diagnostic{Severity: Error, Block: "run." + label, Summary: summary, Detail: detail, Subject: need.Range.Ptr()})
		}
	}
	return diags
}

// withNeeds are the selected runs and those label needs, directly or not,
// in the graph's order: a selection that has what label needs.
func (g *Graph) withNeeds(label string, selected func(string) bool) []string {
	needs := g.Ancestors(label)
	var out []string
	for _, l := range g.Order {
		if needs[l] || selected(l) {
			out = append(out, l)
		}
	}
	return out
}

// Ancestors are the runs label needs, directly or not.
func (g *Graph) Ancestors(label string) map[string]bool {
	out := map[string]bool{}
	var walk func(string)
	walk = func(l string) {
		for _, n := range g.Needs[l] {
			if !out[n.Label] {
				out[n.Label] = true
				walk(n.Label)
			}
		}
	}
	walk(label)
	return out
}
