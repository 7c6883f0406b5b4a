package run

import (
	"github.com/missingstudio/sanddune/core/output"
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
	StrategyType      worktree.StrategyType `json:"branch_strategy"`
	Branch            string                `json:"branch"`
	TargetBranch      string                `json:"target_branch"`
	PromptFile        string                `json:"prompt_file"`
	MaxIterations     int                   `json:"max_iterations"`
	CompletionSignals []string              `json:"completion_signals"`
	IdleTimeout       string                `json:"idle_timeout"`
	CompletionTimeout string                `json:"completion_timeout"`
	CopyToWorktree    []string              `json:"copy_to_worktree"`
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
	// Egress is the sandbox's egress policy (the agent's endpoints
	// included), nil for none.
	Egress *PlannedEgress `json:"egress"`
}

// PlannedEgress is a run's egress policy in the plan.
type PlannedEgress struct {
	Allow []string          `json:"allow"`
	Hosts map[string]string `json:"hosts"`
}

// PlannedOutput is a run's structured output in the plan: its tag, its
// type ("json" or "string") and whether a schema checks it.
type PlannedOutput struct {
	Tag    string      `json:"tag"`
	Type   output.Type `json:"type"`
	Schema bool        `json:"schema"`
}
