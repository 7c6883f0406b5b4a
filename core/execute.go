package core

import (
	"context"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core/internal/execute"
	"github.com/missingstudio/sanddune/core/internal/planning"
	"github.com/missingstudio/sanddune/core/internal/schedule"
	"github.com/missingstudio/sanddune/core/run"
)

// PlannedRun is one run of a plan, as `sanddune run --dry-run` shows it.
type PlannedRun = run.PlannedRun

// PlannedOutput is a run's structured output in the plan.
type PlannedOutput = run.PlannedOutput

// PlannedEgress is a run's egress policy in the plan.
type PlannedEgress = run.PlannedEgress

// Outcome is how one run (or session, or step) went: its result (also of
// a failed run, once setup began) and its error, a *RunError. Its JSON is
// the result's with "error".
type Outcome = run.Outcome

// Execute runs a plan's runs and returns their outcomes in plan order:
// each run once the runs it depends on have succeeded (a run whose
// dependency failed is skipped: Outcome.Skipped says why), at most
// Config.Parallel at once, and at most a pipeline's max_parallel of its
// runs. A for_each run has one outcome per instance.
func Execute(ctx context.Context, p *RunPlan) []Outcome {
	return schedule.Execute(ctx, p.nodes, p.parallel, schedule.Runs[*planning.Planned]{
		Name: func(pr *planning.Planned) string { return pr.Name },
		Key:  func(pr *planning.Planned) (string, cty.Value) { return pr.Key, pr.KeyVal },
		Run: func(ctx context.Context, pr *planning.Planned) (res *Result, err error) {
			defer func() { execute.Done(pr.Spec, phaseOf(pr), res, err) }()
			if pr.Steps != nil {
				return execute.RunSession(ctx, pr.Name, pr.Steps)
			}
			return execute.Run(ctx, pr.Spec)
		},
		Queued: func(pr *planning.Planned) { execute.Waiting(pr.Spec, phaseOf(pr)) },
	})
}

// phaseOf is the start of pr's phase events: the names it goes by and its
// iteration limit (a session's steps' together).
func phaseOf(pr *planning.Planned) run.PhaseEvent {
	e := run.PhaseEvent{Run: pr.Name, Block: pr.Block, Key: pr.Key, MaxIterations: pr.Spec.MaxIterations}
	if pr.Steps != nil {
		e.MaxIterations = execute.MaxIterations(pr.Steps)
	}
	return e
}

// Preflight asks the sandbox provider of each planned run (of each
// session step) whether it can create the run's sandbox here and now (the
// image is there, the runtime starts, the credentials work), making no
// sandbox: the checks Execute starts a run with, for `sanddune validate
// --preflight`. Each sandbox block is asked once per repo; the failures
// are *RunError.
func Preflight(ctx context.Context, p *RunPlan) []error {
	var specs []*execute.Spec
	for _, pr := range p.planned {
		if len(pr.Steps) == 0 {
			specs = append(specs, pr.Spec)
		}
		for _, st := range pr.Steps {
			specs = append(specs, st.Spec)
		}
	}
	return execute.Preflight(ctx, specs)
}

// Run plans and executes one run built in Go. On success it returns the
// result. On failure it returns a *RunError and, once setup began, a
// partial result as well (commits, branch, preserved paths so far).
func Run(ctx context.Context, o RunOptions) (*Result, error) {
	p, err := PlanRun(ctx, o)
	if err != nil {
		return nil, err
	}
	out := Execute(ctx, p)[0]
	return out.Result, out.Err
}
