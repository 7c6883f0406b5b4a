package core

import (
	"maps"
	"strings"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/internal/execute"
	"github.com/missingstudio/sanddune/core/internal/planning"
	"github.com/missingstudio/sanddune/sdk"
)

// stepAttrs are the attributes a step sets; the others are the session's.
var stepAttrs = map[string]bool{
	"agent": true, "prompt": true, "prompt_file": true, "prompt_args": true, "max_iterations": true,
	"completion_signal": true, "idle_timeout": true, "completion_timeout": true, "resume": true, "resume_session": true, "output": true,
}

// planSession plans a session block: each step is planned as a run made of
// the session's attributes and the step's, and their diagnostics are
// attributed to the session ("step.<label>.<attr>" for a step's own).
func planSession(p *planning.Planner, f *config.File, ss *config.SessionBlock, sandboxes map[*config.ProviderBlock]SandboxRef,
	agents map[*config.ProviderBlock]AgentRef, described map[*config.ProviderBlock]*planning.Sandbox,
	descs map[*config.ProviderBlock]sdk.AgentDescription, base planning.Options) (*PlannedRun, Diagnostics) {
	block := "session." + ss.Label
	diags := planning.FromHCL(block, ss.Diags)
	sb, sbOK := sandboxes[ss.Sandbox]
	if diags.HasErrors() || !sbOK {
		return nil, diags
	}
	seen := map[string]bool{}
	var steps []execute.Step
	previous := "" // the previous step's agent plugin
	for i, st := range ss.Steps {
		ag, agOK := agents[st.Agent]
		if !agOK {
			continue // reported with the agent block
		}
		b := st.Body
		env := maps.Clone(ss.Body.Env)
		if env == nil {
			env = map[string]string{}
		}
		maps.Copy(env, b.Env)
		run := &config.RunBlock{Label: ss.Label, Sandbox: ss.Sandbox, Agent: st.Agent, Body: config.RunBody{
			Name: ss.Body.Name, Repo: ss.Body.Repo, BranchStrategy: ss.Body.BranchStrategy, CopyToWorktree: ss.Body.CopyToWorktree,
			Env: env, AllowUnconfined: ss.Body.AllowUnconfined, Hooks: ss.Body.Hooks, Logging: ss.Body.Logging, Timeouts: ss.Body.Timeouts,
			Prompt: b.Prompt, PromptFile: b.PromptFile, PromptArgs: b.PromptArgs, MaxIterations: b.MaxIterations,
			CompletionSignal: b.CompletionSignal, IdleTimeout: b.IdleTimeout, CompletionTimeout: b.CompletionTimeout, Output: b.Output,
		}}
		o, ds := planning.OptionsOf(f, run, base)
		useRefs(&o, sb, ag)
		resume := b.Resume != nil
		ds = append(ds, planning.CheckStepResume(planning.StepResume{Block: block, Resume: b.Resume, First: i == 0,
			MaxIterations: o.MaxIterations, Desc: descs[st.Agent], AgentAddr: ag.Address, Plugin: ag.Plugin, PreviousPlugin: previous})...)
		previous = ag.Plugin
		var spec *execute.Spec
		if !ds.HasErrors() {
			var more Diagnostics
			var caps sdk.SandboxCapabilities
			var sbDesc sdk.SandboxDescription
			if d := described[ss.Sandbox]; d != nil {
				caps, sbDesc = d.Caps, d.Desc
			}
			spec, more = p.Run(block, o, caps, sbDesc, descs[st.Agent])
			ds = append(ds, more...)
		}
		for _, d := range ds {
			if stepAttrs[firstName(d.Attribute)] {
				d.Attribute = "step." + st.Label + "." + d.Attribute
			}
			key := d.Attribute + "\x00" + d.Summary + "\x00" + d.Detail
			if !seen[key] {
				seen[key] = true
				diags = append(diags, d)
			}
		}
		if spec != nil {
			steps = append(steps, execute.Step{Label: st.Label, Spec: spec, ResumePrevious: resume})
		}
	}
	if diags.HasErrors() || len(steps) != len(ss.Steps) {
		return nil, diags
	}
	pr := plannedRun(steps[0].Spec)
	pr.Name, pr.steps = ss.Name(), steps
	for _, st := range steps {
		s := plannedRun(st.Spec)
		s.Name = st.Label
		pr.Steps = append(pr.Steps, s)
	}
	return pr, diags
}

func firstName(path string) string {
	name, _, _ := strings.Cut(path, ".")
	return name
}
