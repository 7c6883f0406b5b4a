package core

import (
	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/internal/planning"
)

// GraphNode is one run block in the graph of a config file (sanddune
// graph): what it needs, its pipeline, and its for_each and
// merge_branches as written.
type GraphNode struct {
	Run           string   `json:"run"`
	Needs         []string `json:"needs"`
	Pipeline      string   `json:"pipeline"`
	ForEach       string   `json:"for_each"`
	MergeBranches string   `json:"merge_branches"`
}

// Graph is the DAG of a config file's run blocks, dependencies first,
// with the problems of its pipelines and dependencies (cycles, unknown
// runs) as diagnostics. It starts no plugin.
func Graph(f *config.File) ([]GraphNode, Diagnostics) {
	g, diags := planning.BuildGraph(f)
	for _, r := range f.Runs {
		diags = append(diags, config.FromHCL("run."+r.Label, r.Pipeline.Diags)...)
	}
	var out []GraphNode
	for _, label := range g.Order {
		r := f.Run(label)
		n := GraphNode{Run: label, ForEach: f.ExprText(r.Pipeline.ForEach), MergeBranches: f.ExprText(r.Pipeline.MergeBranches), Needs: []string{}}
		for _, need := range g.Needs[label] {
			n.Needs = append(n.Needs, need.Label)
		}
		if p := g.Pipeline[label]; p != nil {
			n.Pipeline = p.Label
		}
		out = append(out, n)
	}
	return out, diags
}
