// Package core is sanddune's engine, in two steps, the way Terraform
// (plan/apply) and Packer (Prepare/Run) are built:
//
//   - Plan checks everything that can be checked before anything starts,
//     once: it resolves and configures each provider block, asks each agent
//     provider to describe itself, and works out every run's branch
//     strategy, prompt, env layers and defaults. Every problem is a
//     Diagnostic naming the block and the attribute. Nothing is created
//     (core/internal/planning).
//   - Execute runs a plan: the sandbox provider's preflight, then for each
//     run the worktree, the sandbox, the hooks, the iteration loop and the
//     teardown (core/internal/execute), which never loses commits or
//     uncommitted work and says where they are.
//
// `sanddune validate` is Plan without Execute, `sanddune run --dry-run`
// prints the plan. Library users call Run (PlanRun + Execute) with
// RunOptions built in Go. The types the API shares with the engine are
// defined in public leaf packages and named here: a run's timeouts,
// hooks, result and errors in core/run, diagnostics in core/config.
package core

import (
	"context"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/internal/planning"
	"github.com/missingstudio/sanddune/core/pluginhost"
	"github.com/missingstudio/sanddune/sdk"
)

// Plugins dispenses providers by plugin name: the plugin host
// (*pluginhost.Host).
type Plugins interface {
	Sandbox(ctx context.Context, plugin string) (sdk.SandboxProvider, pluginhost.Component, error)
	Agent(ctx context.Context, plugin string) (sdk.AgentProvider, pluginhost.Component, error)
}

// Diagnostic is one problem Plan found, naming the block and the
// attribute, and where it is in the config file when planned from one.
type Diagnostic = config.Diagnostic

// Diagnostics are the problems Plan found; as an error, its errors.
type Diagnostics = config.Diagnostics

// Severity says whether a diagnostic stops the plan.
type Severity = config.Severity

// The severities.
const (
	Error   = config.Error
	Warning = config.Warning
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
	nodes       []*planning.Node
	planned     []*planning.Planned // Runs' plans
}

// Plan checks the runs of a config file and plans the selected ones. It
// always returns a plan (so that its Diagnostics can be shown); the error,
// a Diagnostics, lists the errors.
func Plan(ctx context.Context, cfg Config, sel Selection) (*RunPlan, error) {
	p, err := planning.PlanFile(ctx, planning.Request{File: cfg.File, Plugins: cfg.Plugins, Base: sel.Interactive.options(cfg.Run),
		Parallel: cfg.Parallel, Runs: sel.Runs, Strict: sel.Strict})
	return runPlan(p), err
}

// PlanRun plans one run built in Go. Its providers are used as they are
// (configured by the caller). A failure is a *RunError of PhaseConfig.
func PlanRun(ctx context.Context, o RunOptions) (*RunPlan, error) {
	return planRun(ctx, o, nil)
}

// planRun plans one run built in Go, as an interactive session when ia is
// set.
func planRun(ctx context.Context, o RunOptions, ia *Attachment) (*RunPlan, error) {
	p, err := planning.PlanRun(ctx, ia.options(o))
	if err != nil {
		return nil, err
	}
	return runPlan(p), nil
}

func runPlan(p *planning.Plan) *RunPlan {
	rp := &RunPlan{Diagnostics: p.Diagnostics, parallel: p.Parallel, nodes: p.Nodes, planned: p.Runs}
	for _, pr := range p.Runs {
		rp.Runs = append(rp.Runs, planning.View(pr))
	}
	return rp
}
