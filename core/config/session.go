package config

import (
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
)

// SessionBlock is a decoded `session "<label>"` block: steps that run in
// order in one worktree and one sandbox. It decodes like a run block
// whose agent and prompt live in its steps.
type SessionBlock struct {
	Label   string
	Sandbox *ProviderBlock
	Body    SessionBody
	Steps   []*StepBlock
	// Diags are the block's own problems (decoding, references), its
	// steps' included.
	Diags hcl.Diagnostics

	DeclRange  hcl.Range
	LabelRange hcl.Range
	attrs      hcl.Attributes
	nested     map[string]hcl.Range
}

// SessionBody is the schema of a session block: what its steps share.
type SessionBody struct {
	Sandbox        *hcl.Attribute    `hcl:"sandbox,optional"`
	Name           *string           `hcl:"name,optional"`
	Repo           *string           `hcl:"repo,optional"`
	BranchStrategy cty.Value         `hcl:"branch_strategy,optional"`
	CopyToWorktree []string          `hcl:"copy_to_worktree,optional"`
	Env            map[string]string `hcl:"env,optional"`
	// AllowUnconfined as in a run block.
	AllowUnconfined *bool          `hcl:"allow_unconfined,optional"`
	TokenBudget     *int64         `hcl:"token_budget,optional"`
	Hooks           *HooksBlock    `hcl:"hooks,block"`
	Logging         *LoggingBlock  `hcl:"logging,block"`
	Timeouts        *TimeoutsBlock `hcl:"timeouts,block"`
	StepBlocks      []StepBody     `hcl:"step,block"`
}

// StepBlock is a decoded `step "<label>"` block of a session.
type StepBlock struct {
	Label string
	Agent *ProviderBlock
	Body  StepBody

	DeclRange hcl.Range
	attrs     hcl.Attributes
}

// StepBody is the schema of a step: one run's agent, prompt and loop.
type StepBody struct {
	Label             string            `hcl:"label,label"`
	Agent             *hcl.Attribute    `hcl:"agent,optional"`
	Prompt            *string           `hcl:"prompt,optional"`
	PromptFile        *string           `hcl:"prompt_file,optional"`
	PromptArgs        map[string]string `hcl:"prompt_args,optional"`
	MaxIterations     *int              `hcl:"max_iterations,optional"`
	CompletionSignal  cty.Value         `hcl:"completion_signal,optional"`
	IdleTimeout       *string           `hcl:"idle_timeout,optional"`
	CompletionTimeout *string           `hcl:"completion_timeout,optional"`
	Env               map[string]string `hcl:"env,optional"`
	// Resume is "previous": continue the previous step's agent session.
	Resume *string      `hcl:"resume,optional"`
	Output *OutputBlock `hcl:"output,block"`

	DeclRange hcl.Range `hcl:",def_range"`
}

// Name is the session's name: its name attribute, else its label.
func (s *SessionBlock) Name() string {
	if s.Body.Name != nil {
		return *s.Body.Name
	}
	return s.Label
}

// AttrRange is RunBlock.AttrRange for a session: "step.<label>.<attr>"
// names an attribute of a step.
func (s *SessionBlock) AttrRange(path string) hcl.Range {
	if rng, ok := s.nested[path]; ok {
		return rng
	}
	if rest, ok := strings.CutPrefix(path, "step."); ok {
		for _, st := range s.Steps {
			if attr, ok := strings.CutPrefix(rest, st.Label+"."); ok {
				return rangeIn(st.attrs, st.Body.Output, attr, st.DeclRange, nil)
			} else if rest == st.Label {
				return st.DeclRange
			}
		}
		return s.DeclRange
	}
	return attrRange(s.attrs, path, s.DeclRange, map[string]*hcl.Range{
		"name": &s.LabelRange, "hooks": hooksRange(s.Body.Hooks), "logging": loggingRange(s.Body.Logging), "timeouts": timeoutsRange(s.Body.Timeouts),
	})
}

var (
	sessionSchema, _ = gohcl.ImpliedBodySchema(&SessionBody{})
	stepSchema, _    = gohcl.ImpliedBodySchema(&StepBody{})
)

func (f *File) decodeSessions(blocks []*hcl.Block, taken map[string]hcl.Range) ([]*SessionBlock, hcl.Diagnostics) {
	var out []*SessionBlock
	var diags hcl.Diagnostics
	for _, b := range blocks {
		label := b.Labels[0]
		if prev, dup := taken[label]; dup {
			diags = append(diags, errorDiag(b.DefRange, "Duplicate session block", "%q was already declared (a run or a session) at %s: runs and sessions share one name space.", label, prev))
			continue
		}
		taken[label] = b.DefRange
		s := &SessionBlock{Label: label, DeclRange: b.DefRange, LabelRange: b.LabelRanges[0]}
		content, _, _ := b.Body.PartialContent(sessionSchema)
		s.attrs = content.Attributes
		s.nested = nestedRanges(b.Body)
		s.Diags = gohcl.DecodeBody(b.Body, f.evalCtx, &s.Body)
		owner := &RunBlock{Label: label, DeclRange: b.DefRange}
		if isNone(s.Body.Sandbox) {
			s.Diags = append(s.Diags, errorDiag(s.Body.Sandbox.Expr.Range(), "No sandbox for a session",
				`sandbox = "none" is only for interactive sessions of a run block: a session's steps run unattended in one sandbox.`))
		} else {
			s.Sandbox = owner.reference(s.Body.Sandbox, sdk.KindSandbox, f.Sandboxes)
		}
		stepBlocks := content.Blocks.OfType("step")
		seen := map[string]bool{}
		for i, body := range s.Body.StepBlocks {
			st := &StepBlock{Label: body.Label, Body: body, DeclRange: body.DeclRange}
			if i < len(stepBlocks) {
				c, _, _ := stepBlocks[i].Body.PartialContent(stepSchema)
				st.attrs = c.Attributes
				outputBlock(st.Body.Output, c)
			}
			if seen[st.Label] {
				s.Diags = append(s.Diags, errorDiag(st.DeclRange, "Duplicate step", "session %q already has a step %q.", label, st.Label))
			}
			seen[st.Label] = true
			st.Agent = owner.reference(body.Agent, sdk.KindAgent, f.Agents)
			s.Steps = append(s.Steps, st)
		}
		if len(s.Body.StepBlocks) == 0 && !s.Diags.HasErrors() {
			s.Diags = append(s.Diags, errorDiag(b.DefRange, "Session without steps", `session %q has no step blocks: add step "<name>" { agent = ..., prompt_file = ... }.`, label))
		}
		s.Diags = append(s.Diags, owner.Diags...)
		out = append(out, s)
	}
	return out, diags
}
