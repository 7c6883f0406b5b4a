package planning

import (
	"errors"
	"fmt"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/internal/prompt"
	"github.com/missingstudio/sanddune/core/output"
)

// Output reads the output block; its checks are CheckOutput's.
func (v *Values) Output(b *config.OutputBlock) *output.Spec {
	if b == nil {
		return nil
	}
	s := &output.Spec{Tag: b.Tag}
	if b.Type != nil {
		s.Type = output.Type(*b.Type)
	}
	switch val := b.Schema; {
	case val == cty.NilVal || val.IsNull():
	case val.Type() == cty.String:
		s.Schema = val.AsString()
	case val.Type().IsObjectType() || val.Type().IsMapType():
		js, err := ctyjson.Marshal(val, val.Type())
		if err != nil {
			v.bad("output.schema", "Invalid output schema", "The schema cannot be written as JSON: %v.", err)
		}
		s.Schema = string(js)
	default:
		v.bad("output.schema", "Invalid output schema", `schema is JSON Schema text, such as file("plan.schema.json"), or an object.`)
	}
	return s
}

// OutputCheck is what CheckOutput needs to know about a run.
type OutputCheck struct {
	Block string
	// Spec is compiled by CheckOutput.
	Spec *output.Spec
	// MaxIterations is the run's, defaults applied.
	MaxIterations int
	// Prompt is the loaded prompt (nil when it is invalid), PromptAttr
	// its attribute ("prompt" or "prompt_file").
	Prompt      *prompt.Template
	PromptAttr  string
	Interactive bool
}

// CheckOutput checks a run's structured output: a valid tag, type and
// schema, one iteration, an unattended run, and a prompt that asks for the
// tag.
func CheckOutput(c OutputCheck) Diagnostics {
	var diags Diagnostics
	fail := func(attr, summary, format string, args ...any) {
		diags = append(diags, Diagnostic{Severity: Error, Block: c.Block, Attribute: attr, Summary: summary, Detail: fmt.Sprintf(format, args...)})
	}
	if err := c.Spec.Compile(); err != nil {
		var p *output.Problem
		if errors.As(err, &p) {
			fail("output."+p.Attribute, "Invalid output", "%v", p.Err)
		} else {
			fail("output", "Invalid output", "%v", err)
		}
	}
	if c.MaxIterations != 1 {
		fail("max_iterations", "Structured output needs max_iterations = 1",
			"the output is read from the agent's final text of the run's one iteration; max_iterations is %d.", c.MaxIterations)
	}
	if c.Interactive {
		fail("output", "No structured output from an interactive session", "an interactive session has no final text to read the output from: drop the output block, or run it with sanddune run.")
	}
	if c.Prompt != nil && c.Spec.Tag != "" && !c.Prompt.Mentions(c.Spec.OpenTag()) {
		where := "the prompt"
		if c.Prompt.File != "" {
			where = "the prompt file " + c.Prompt.File
		}
		fail(c.PromptAttr, "The prompt does not ask for the output tag",
			"%s does not contain %s: tell the agent to answer inside %s…</%s>, or the run cannot find its output.", where, c.Spec.OpenTag(), c.Spec.OpenTag(), c.Spec.Tag)
	}
	return diags
}
