package planning

import (
	"fmt"

	"github.com/missingstudio/sanddune/core/session"
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
