package core

import (
	"context"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core/internal/env"
	"github.com/missingstudio/sanddune/core/internal/execute"
	"github.com/missingstudio/sanddune/core/internal/planning"
	"github.com/missingstudio/sanddune/core/internal/schedule"
	"github.com/missingstudio/sanddune/core/output"
	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// PlannedRun is one run of a plan, as `sanddune run --dry-run` shows it.
type PlannedRun struct {
	Name     string        `json:"name"`
	Repo     string        `json:"repo"`
	Sandbox  string        `json:"sandbox"`
	Contract sdk.Contract  `json:"contract"`
	Agent    string        `json:"agent"`
	Strategy worktree.Plan `json:"-"`
	// StrategyType, Branch and TargetBranch say where commits go: Branch
	// is "" for merge-to-head, whose temporary branch is made at run time.
	StrategyType      StrategyType `json:"branch_strategy"`
	Branch            string       `json:"branch"`
	TargetBranch      string       `json:"target_branch"`
	PromptFile        string       `json:"prompt_file"`
	MaxIterations     int          `json:"max_iterations"`
	CompletionSignals []string     `json:"completion_signals"`
	IdleTimeout       string       `json:"idle_timeout"`
	CompletionTimeout string       `json:"completion_timeout"`
	CopyToWorktree    []string     `json:"copy_to_worktree"`
	// EnvKeys are the names of the env the sandbox gets (never values).
	EnvKeys       []string `json:"env_keys"`
	Hooks         int      `json:"hooks"`
	ResumeSession string   `json:"resume_session"`
	// Timeouts are the lifecycle timeouts, defaults applied.
	Timeouts Timeouts `json:"timeouts"`
	// Output is the structured output the run asks for, nil for none.
	Output *PlannedOutput `json:"output"`
	// Steps are a session's steps (each planned like a run), nil for a run.
	Steps []*PlannedRun `json:"steps"`
	// Block is the run block's label ("" for a run built in Go); Key the
	// for_each key of an instance, "" otherwise.
	Block string `json:"block"`
	Key   string `json:"key"`
	// DependsOn are the runs this one waits for (depends_on and the runs
	// its attributes reference); Pipeline the pipeline block listing it.
	DependsOn []string `json:"depends_on"`
	Pipeline  string   `json:"pipeline"`
	// ForEach is the for_each expression of a run whose instances are
	// known at run time only.
	ForEach string `json:"for_each"`
	// AtRunTime says the run is planned again once the runs it depends on
	// are done: values shown as "pending" come from their results.
	AtRunTime bool `json:"planned_at_run_time"`
	// MergeBranches are the branches merged into the run's branch before
	// its agent starts.
	MergeBranches []string `json:"merge_branches"`

	spec *execute.Spec
}

// PlannedOutput is a run's structured output in the plan: its tag, its
// type ("json" or "string") and whether a schema checks it.
type PlannedOutput struct {
	Tag    string      `json:"tag"`
	Type   output.Type `json:"type"`
	Schema bool        `json:"schema"`
}

// plannedRun shows a planned run, or session with its steps.
func plannedRun(p *planning.Planned) *PlannedRun {
	pr := specView(p.Spec)
	pr.Name, pr.Block, pr.Key, pr.DependsOn, pr.Pipeline, pr.ForEach, pr.AtRunTime = p.Name, p.Block, p.Key, p.DependsOn, p.Pipeline, p.ForEach, p.AtRunTime
	for _, st := range p.Steps {
		s := specView(st.Spec)
		s.Name = st.Label
		pr.Steps = append(pr.Steps, s)
	}
	return pr
}

func specView(s *execute.Spec) *PlannedRun {
	var out *PlannedOutput
	if s.Output != nil {
		out = &PlannedOutput{Tag: s.Output.Tag, Type: s.Output.Type, Schema: s.Output.Schema != ""}
	}
	return &PlannedRun{
		Name: s.Name, Repo: s.Repo.Root, Sandbox: s.SandboxAddr, Contract: s.Caps.Contract, Agent: s.AgentAddr,
		Strategy: s.Strategy, StrategyType: s.Strategy.Type, Branch: s.Strategy.Branch, TargetBranch: s.Strategy.TargetBranch,
		PromptFile: s.Prompt.File, MaxIterations: s.MaxIterations, CompletionSignals: s.Signals,
		IdleTimeout: s.IdleTimeout.String(), CompletionTimeout: s.CompletionTimeout.String(),
		CopyToWorktree: s.CopyPaths, EnvKeys: env.Keys(s.Env),
		Hooks:         len(s.Hooks.HostOnWorktreeReady) + len(s.Hooks.HostOnSandboxReady) + len(s.Hooks.SandboxOnSandboxReady),
		ResumeSession: s.ResumeSession, Timeouts: s.Timeouts, Output: out, MergeBranches: s.MergeBranches, spec: s,
	}
}

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
		Run: func(ctx context.Context, pr *planning.Planned) (*Result, error) {
			if pr.Steps != nil {
				return execute.RunSession(ctx, pr.Name, pr.Steps)
			}
			return execute.Run(ctx, pr.Spec)
		},
	})
}

// Preflight asks the sandbox provider of each planned run (of each
// session step) whether it can create the run's sandbox here and now (the
// image is there, the runtime starts, the credentials work), making no
// sandbox: the checks Execute starts a run with, for `sanddune validate
// --preflight`. Each sandbox block is asked once per repo; the failures
// are *RunError.
func Preflight(ctx context.Context, p *RunPlan) []error {
	var specs []*execute.Spec
	for _, pr := range p.Runs {
		if len(pr.Steps) == 0 {
			specs = append(specs, pr.spec)
		}
		for _, st := range pr.Steps {
			specs = append(specs, st.spec)
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
