// Package schedule runs a plan's graph: each node once the nodes it needs
// have succeeded, at most a given number of runs at once and at most a
// pipeline's max_parallel of one pipeline, passing each node's results to
// the nodes that need them as run.<label> values.
package schedule

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/run"
)

// Node is one run block (or session) of the graph: the runs it stands for
// and the nodes it needs. R is the caller's planned run.
type Node[R any] struct {
	Label    string
	Addr     string // run.<label>, session.<label>
	Needs    []*Node[R]
	Pipeline *config.PipelineBlock
	// ForEach says the node's runs are for_each instances (run.<label> is
	// then a list or a map of results).
	ForEach bool
	// Runs are the node's planned runs. A node planned at run time
	// (Expand set) has none.
	Runs []R
	// Expand plans the node's runs once the runs it needs are done, given
	// their results as run.<label> values.
	Expand func(ctx context.Context, results map[string]cty.Value) ([]R, error)
}

// Runs says how the scheduler names, keys and runs an R.
type Runs[R any] struct {
	Name func(R) string
	// Key is a for_each instance's key, as a string and as its value.
	Key func(R) (string, cty.Value)
	Run func(context.Context, R) (*run.Result, error)
	// Queued, when set, is told that a run waits for its place.
	Queued func(R)
}

// Execute runs the nodes: each once the nodes it needs have succeeded, at
// most global runs at once and at most its pipeline's max_parallel of one
// pipeline; of the runs waiting for a place, the first in node order goes
// first (runs start in file order). A node whose need failed or was
// skipped is skipped. The outcomes are in node order, instances in key
// order.
func Execute[R any](ctx context.Context, nodes []*Node[R], global int, rs Runs[R]) []run.Outcome {
	type state struct {
		done   chan struct{}
		outs   []run.Outcome
		failed bool
		value  cty.Value
	}
	states := map[*Node[R]]*state{}
	for _, n := range nodes {
		states[n] = &state{done: make(chan struct{})}
	}
	places := newSlots(global, nodes)
	// The runs ready at the start line up before any goes.
	lined := map[*Node[R]][]*ticket{}
	for i, n := range nodes {
		if len(n.Needs) == 0 && n.Expand == nil {
			for j := range n.Runs {
				lined[n] = append(lined[n], places.enqueue(i, j, n.Pipeline, false))
			}
		}
	}
	places.start()
	runOne := func(r R, t *ticket) run.Outcome {
		if rs.Queued != nil {
			rs.Queued(r)
		}
		defer places.wait(ctx, t)()
		res, err := rs.Run(ctx, r)
		return run.Outcome{Name: rs.Name(r), Result: res, Err: err}
	}
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() {
			st := states[n]
			defer close(st.done)
			results := map[string]cty.Value{}
			var blocked []string
			for _, need := range n.Needs {
				ns := states[need]
				<-ns.done
				if ns.failed {
					blocked = append(blocked, need.Addr)
				}
				results[need.Label] = ns.value
			}
			runs := n.Runs
			if len(blocked) > 0 {
				st.failed = true
				reason := fmt.Sprintf("%s did not succeed", strings.Join(blocked, " and "))
				if len(runs) == 0 {
					st.outs = []run.Outcome{{Name: n.Label, Skipped: reason}}
				}
				for _, r := range runs {
					st.outs = append(st.outs, run.Outcome{Name: rs.Name(r), Skipped: reason})
				}
				return
			}
			if n.Expand != nil {
				var err error
				if runs, err = n.Expand(ctx, results); err != nil {
					st.failed, st.outs = true, []run.Outcome{{Name: n.Label, Err: err}}
					return
				}
			}
			outs := make([]run.Outcome, len(runs))
			var iwg sync.WaitGroup
			for j, r := range runs {
				var t *ticket
				if j < len(lined[n]) {
					t = lined[n][j]
				} else {
					t = places.enqueue(i, j, n.Pipeline, true)
				}
				iwg.Go(func() { outs[j] = runOne(r, t) })
			}
			iwg.Wait()
			for _, o := range outs {
				if o.Err != nil {
					st.failed = true
				}
			}
			st.outs, st.value = outs, nodeValue(n, runs, outs, rs)
		})
	}
	wg.Wait()
	var out []run.Outcome
	for _, n := range nodes {
		out = append(out, states[n].outs...)
	}
	return out
}

// Parallelism is how many runs run at once: flag (-p) when set, else 1, or
// the largest max_parallel of the pipelines among nodes.
func Parallelism[R any](flag int, nodes []*Node[R]) int {
	if flag > 0 {
		return flag
	}
	n := 1
	for _, nd := range nodes {
		if p := nd.Pipeline; p != nil {
			n = max(n, MaxParallel(p))
		}
	}
	return n
}

// MaxParallel is how many runs of pipeline p run at once.
func MaxParallel(p *config.PipelineBlock) int {
	if p.MaxParallel == 0 {
		return config.DefaultMaxParallel
	}
	return p.MaxParallel
}
