package core

import (
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/core/internal/execute"
)

const planSchemaJSON = `{"type": "object", "required": ["issues"], "properties": {"issues": {"type": "array"}}}`

// TestFakeOutputChecks: each problem of an output block is one error at
// its attribute, before anything starts.
func TestFakeOutputChecks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, summary string
		line, col           int
	}{
		{"iterations", `prompt = "answer in <plan>"
  max_iterations = 3
  output {
    tag    = "plan"
    schema = file("plan.schema.json")
  }`, "Structured output needs max_iterations = 1", 9, 20},
		{"inline prompt without the tag", `prompt = "plan it"
  output {
    tag  = "plan"
    type = "string"
  }`, "The prompt does not ask for the output tag", 8, 12},
		{"prompt file without the tag", `prompt_file = "nop.md"
  output {
    tag    = "plan"
    schema = file("plan.schema.json")
  }`, "The prompt does not ask for the output tag", 8, 17},
		{"invalid schema", `prompt = "answer in <plan>"
  output {
    tag    = "plan"
    schema = "{\"type\": 12}"
  }`, "Invalid output", 11, 14},
		{"schema not JSON", `prompt = "answer in <plan>"
  output {
    tag    = "plan"
    schema = "type: object"
  }`, "Invalid output", 11, 14},
		{"schema file missing", `prompt = "answer in <plan>"
  output {
    tag    = "plan"
    schema = file("missing.json")
  }`, "Error in function call", 11, 14},
		{"unknown type", `prompt = "answer in <plan>"
  output {
    tag  = "plan"
    type = "yaml"
  }`, "Invalid output", 11, 12},
		{"neither schema nor type", `prompt = "answer in <plan>"
  output {
    tag = "plan"
  }`, "Invalid output", 9, 3},
		{"bad tag", `prompt = "answer in <a plan>"
  output {
    tag  = "a plan"
    type = "string"
  }`, "Invalid output", 10, 12},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := repoWith(t, blocks+`run "r" {
  sandbox = sandbox.box.dev
  agent   = agent.cli.a
  `+c.body+`
}
`, "plan.schema.json", planSchemaJSON, "nop.md", "plan the work")
			p, err := plan(t, path, newPlugins(), Selection{Strict: true})
			if err == nil {
				t.Fatalf("accepted; diagnostics:\n%v", p.Diagnostics)
			}
			if len(p.Diagnostics.Errors()) != 1 {
				t.Fatalf("want one error, got:\n%v", p.Diagnostics)
			}
			at(t, only(t, p.Diagnostics, c.summary), c.line, c.col)
		})
	}
}

// TestFakeOutputPlanned: a run and a session step with output blocks
// plan; the schema (a file, or an HCL object) is compiled into the spec.
func TestFakeOutputPlanned(t *testing.T) {
	t.Parallel()
	path := repoWith(t, blocks+`run "plan" {
  sandbox     = sandbox.box.dev
  agent       = agent.cli.a
  prompt_file = "plan.md"
  prompt_args = { TAG = "<plan>" }
  output {
    tag    = "plan"
    schema = file("plan.schema.json")
  }
}
session "s" {
  sandbox = sandbox.box.dev
  step "summarise" {
    agent  = agent.cli.a
    prompt = "sum up inside <summary>"
    output {
      tag  = "summary"
      type = "string"
    }
  }
  step "check" {
    agent  = agent.cli.a
    prompt = "answer in <ok>"
    output {
      tag    = "ok"
      schema = { type = "boolean" }
    }
  }
}
`, "plan.schema.json", planSchemaJSON, "plan.md", "Answer inside {{TAG}}")
	p, err := plan(t, path, newPlugins(), Selection{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 2 {
		t.Fatalf("%d runs planned", len(p.Runs))
	}
	for _, tc := range []struct {
		run  *execute.Spec
		text string
		ok   bool
	}{
		{p.planned[0].Spec, `<plan>{"issues": []}</plan>`, true},
		{p.planned[0].Spec, `<plan>{"issues": 1}</plan>`, false},
		{p.planned[1].Steps[0].Spec, `<summary> done </summary>`, true},
		{p.planned[1].Steps[1].Spec, `<ok>true</ok>`, true},
		{p.planned[1].Steps[1].Spec, `<ok>"yes"</ok>`, false},
	} {
		out := tc.run.Output
		if out == nil {
			t.Fatalf("%s: no output planned", tc.run.Name)
		}
		if _, err := out.Extract(tc.text); (err == nil) != tc.ok {
			t.Errorf("%s: Extract(%s) = %v, want ok %v", tc.run.Name, tc.text, err, tc.ok)
		}
	}
}

// TestFakeStepOutputAtItsAttribute: a step's output problem is reported
// at the step's output attribute.
func TestFakeStepOutputAtItsAttribute(t *testing.T) {
	t.Parallel()
	path := repoWith(t, blocks+`session "s" {
  sandbox = sandbox.box.dev
  step "a" {
    agent          = agent.cli.a
    prompt         = "answer in <x>"
    max_iterations = 2
    output {
      tag    = "x"
      schema = "{\"type\": \"nope\"}"
    }
  }
}
`)
	p, err := plan(t, path, newPlugins(), Selection{Strict: true})
	if err == nil {
		t.Fatal("accepted")
	}
	d := only(t, p.Diagnostics, "Invalid output")
	at(t, d, 13, 16)
	if !strings.HasSuffix(d.Attribute, "step.a.output.schema") {
		t.Fatalf("attribute %q", d.Attribute)
	}
	at(t, only(t, p.Diagnostics, "max_iterations = 1"), 10, 22)
}

// TestFakeNoOutputFromAnInteractiveSession: an interactive session has no
// final text, so its run's output block is refused at the block.
func TestFakeNoOutputFromAnInteractiveSession(t *testing.T) {
	t.Parallel()
	path := repoWith(t, blocks+`run "r" {
  sandbox = sandbox.box.dev
  agent   = agent.cli.a
  prompt  = "answer in <x>"
  output {
    tag  = "x"
    type = "string"
  }
}
`)
	p, err := plan(t, path, newPlugins(), Selection{Runs: []string{"r"}, Interactive: &Attachment{}})
	if err == nil {
		t.Fatal("accepted")
	}
	at(t, only(t, p.Diagnostics, "No structured output from an interactive session"), 9, 3)
}
