package planning

import (
	"github.com/missingstudio/sanddune/core/internal/env"
	"github.com/missingstudio/sanddune/core/internal/execute"
	"github.com/missingstudio/sanddune/core/run"
)

// View is a planned run, or session with its steps, as `sanddune run
// --dry-run` shows it.
func View(p *Planned) *run.PlannedRun {
	pr := specView(p.Spec)
	pr.Name, pr.Block, pr.Key, pr.DependsOn, pr.Pipeline, pr.ForEach, pr.AtRunTime = p.Name, p.Block, p.Key, p.DependsOn, p.Pipeline, p.ForEach, p.AtRunTime
	for _, st := range p.Steps {
		s := specView(st.Spec)
		s.Name = st.Label
		pr.Steps = append(pr.Steps, s)
	}
	return pr
}

func specView(s *execute.Spec) *run.PlannedRun {
	var out *run.PlannedOutput
	if s.Output != nil {
		out = &run.PlannedOutput{Tag: s.Output.Tag, Type: s.Output.Type, Schema: s.Output.Schema != ""}
	}
	var eg *run.PlannedEgress
	if e := s.Egress; e != nil {
		eg = &run.PlannedEgress{Allow: e.Allow, Hosts: e.Hosts}
	}
	return &run.PlannedRun{
		Name: s.Name, Repo: s.Repo.Root, Sandbox: s.Sandbox.Address, Contract: s.Caps.Contract, Agent: s.Agent.Address,
		Strategy: s.Strategy, StrategyType: s.Strategy.Type, Branch: s.Strategy.Branch, TargetBranch: s.Strategy.TargetBranch,
		PromptFile: s.Prompt.File, MaxIterations: s.MaxIterations, CompletionSignals: s.CompletionSignals,
		IdleTimeout: s.IdleTimeout.String(), CompletionTimeout: s.CompletionTimeout.String(),
		CopyToWorktree: s.CopyPaths, EnvKeys: env.Keys(s.Env),
		Hooks:         len(s.Hooks.HostOnWorktreeReady) + len(s.Hooks.HostOnSandboxReady) + len(s.Hooks.SandboxOnSandboxReady),
		ResumeSession: s.ResumeSession, Timeouts: s.Timeouts, Output: out, MergeBranches: s.MergeBranches, Egress: eg,
	}
}
