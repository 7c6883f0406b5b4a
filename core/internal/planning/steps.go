package planning

import (
	"fmt"
	"maps"
	"strings"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/internal/execute"
	"github.com/missingstudio/sanddune/core/internal/session"
	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/sdk"
)

// ResumePrevious is the one value of a step's resume: continue the
// previous step's agent session.
const ResumePrevious = "previous"

// StepResume is what CheckStepResume needs to know about a step.
type StepResume struct {
	Block     string
	Resume    *string // nil when unset
	First     bool
	AgentAddr string
	// Plugin and PreviousPlugin are the agent plugins of the step and of
	// the previous one.
	Plugin, PreviousPlugin string
	Desc                   sdk.AgentDescription
	// MaxIterations is the step's, defaults applied.
	MaxIterations int
}

// CheckStepResume checks a session step's `resume`: "previous" only, not
// on the first step, with one iteration, and an agent that can resume.
func CheckStepResume(s StepResume) Diagnostics {
	if s.Resume == nil {
		return nil
	}
	fail := func(summary, detail string) Diagnostics {
		return Diagnostics{{Severity: Error, Block: s.Block, Attribute: "resume", Summary: summary, Detail: detail}}
	}
	switch {
	case *s.Resume != ResumePrevious:
		return fail("Invalid resume", fmt.Sprintf(`resume = %q: the only value is "previous" (continue the previous step's agent session).`, *s.Resume))
	case s.First:
		return fail("Nothing to resume", "the first step has no previous step whose session it could continue.")
	case s.Plugin != s.PreviousPlugin:
		return fail("Cannot resume another agent's session",
			fmt.Sprintf("%s cannot continue a session of the previous step's %s agent: use the same agent plugin, or drop resume.", s.AgentAddr, s.PreviousPlugin))
	case s.MaxIterations > 1:
		return fail("resume needs max_iterations = 1",
			fmt.Sprintf("a resumed session continues one conversation, so the step can have only one iteration; max_iterations is %d.", s.MaxIterations))
	}
	if err := session.CheckResume(s.Desc, false); err != nil {
		return fail("Cannot resume a session with this agent", fmt.Sprintf("%s: %v", s.AgentAddr, err))
	}
	return nil
}

// stepAttrs are the attributes a step sets; the others are the session's.
var stepAttrs = map[string]bool{
	"agent": true, "prompt": true, "prompt_file": true, "prompt_args": true, "max_iterations": true,
	"completion_signal": true, "idle_timeout": true, "completion_timeout": true, "resume": true, "resume_session": true, "output": true,
}

// session plans a session block: its own values are read once, and each
// step is planned as a run of them and of the step's values; the
// diagnostics are attributed to the session ("step.<label>.<attr>" for
// a step's own).
func (p *planner) session(f *config.File, ss *config.SessionBlock, sandboxes map[*config.ProviderBlock]*Sandbox,
	agents map[*config.ProviderBlock]*Agent, base Options) (*Planned, Diagnostics) {
	block := "session." + ss.Label
	diags := config.FromHCL(block, ss.Diags)
	sb, sbOK := sandboxes[ss.Sandbox]
	if stopsPlanning(diags) || !sbOK {
		return nil, diags
	}
	b := ss.Body
	shared := base
	shared.Name, shared.BaseDir = ss.Name(), f.Dir
	v := &Values{Block: block}
	v.workspace(&shared, b.Repo, b.BranchStrategy, b.CopyToWorktree, b.Env, b.AllowUnconfined, b.Hooks, b.Logging, b.Timeouts)
	shared.TokenBudget = v.TokenBudget(b.TokenBudget)
	shared.useSandbox(ss.Sandbox.Address, sb)
	diags = append(diags, v.Diags...)
	// Each step is checked as a run, the session's values with it: the
	// first step checked reports them, a later one its own values (those
	// of stepAttrs and its own env entries) and, when its agent block is
	// not an earlier step's, what depends on the agent (runCheck.byAgent).
	sessionChecked := false
	agentChecked := map[*config.ProviderBlock]bool{}
	var steps []execute.Step
	previous := "" // the previous step's agent plugin
	for i, st := range ss.Steps {
		ag, agOK := agents[st.Agent]
		if !agOK {
			continue // reported with the agent block
		}
		stb := st.Body
		o := shared
		sv := &Values{Block: block}
		sv.loop(&o, stb.Prompt, stb.PromptFile, stb.PromptArgs, stb.MaxIterations, stb.CompletionSignal, stb.IdleTimeout, stb.CompletionTimeout, stb.Output)
		stepEnv, ds := envEntries(block, "env", stb.Env)
		sv.Diags = append(sv.Diags, ds...)
		o.Env = maps.Clone(shared.Env)
		if o.Env == nil {
			o.Env = map[string]string{}
		}
		maps.Copy(o.Env, stepEnv)
		o.useAgent(st.Agent, ag)
		own := append(sv.Diags, CheckStepResume(StepResume{Block: block, Resume: stb.Resume, First: i == 0,
			MaxIterations: o.MaxIterations, Desc: ag.Desc, AgentAddr: st.Agent.Address, Plugin: st.Agent.Plugin, PreviousPlugin: previous})...)
		previous = st.Agent.Plugin
		c := p.check(block, o, sb.Caps, sb.Desc, ag.Desc)
		newAgent := !agentChecked[st.Agent]
		for j, d := range c.diags {
			switch {
			case stepAttrs[firstName(d.Attribute)]:
				own = append(own, d)
			case !sessionChecked || newAgent && c.byAgent[j]:
				diags = append(diags, d)
			}
		}
		sessionChecked, agentChecked[st.Agent] = true, true
		for _, d := range own {
			d.Attribute = "step." + st.Label + "." + d.Attribute
			diags = append(diags, d)
		}
		if spec := c.spec(); spec != nil {
			steps = append(steps, execute.Step{Label: st.Label, Spec: spec, ResumePrevious: stb.Resume != nil})
		}
	}
	if diags.HasErrors() || len(steps) != len(ss.Steps) {
		return nil, diags
	}
	shareBudget(steps)
	return &Planned{Name: ss.Name(), Spec: steps[0].Spec, Steps: steps}, diags
}

// shareBudget makes a session's steps spend one token budget, the
// session's, instead of one each.
func shareBudget(steps []execute.Step) {
	var shared *run.Budget
	for _, st := range steps {
		for i, b := range st.Spec.Budgets {
			if b.Scope == run.ScopeRun {
				if shared == nil {
					shared = b
				}
				st.Spec.Budgets[i] = shared
			}
		}
	}
}

func firstName(path string) string {
	name, _, _ := strings.Cut(path, ".")
	return name
}
