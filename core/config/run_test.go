package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

func TestFakeIssueExampleRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "prompt.md", "fix {{ISSUE_NUMBER}}")
	path := writeFile(t, dir, "sanddune.hcl", `
variable "issue" { default = "42" }

sandbox "fakeiso" "default" {
  image = "debian"
}
sandbox "fakebox" "other" {
  image = "debian"
}
agent "fakeagent" "opus" {
  command = ["claude"]
}

run "fix-issue" {
  sandbox = sandbox.fakeiso.default
  agent   = agent.fakeagent.opus
  prompt_file = "prompt.md"
  prompt_args = { ISSUE_NUMBER = var.issue }
  branch_strategy = { type = "branch", branch = "agent/fix-${var.issue}" }
  max_iterations     = 5
  completion_signal  = ["<promise>COMPLETE</promise>", "<promise>ABORTED</promise>"]
  idle_timeout       = "10m"
  completion_timeout = "60s"
  copy_to_worktree   = [".env", "node_modules"]
  env  = { LOG_LEVEL = "debug" }
  name = "fix-42"
  repo = "../repo"
  hooks {
    host {
      on_worktree_ready { command = "cp .env.example .env" }
    }
    sandbox {
      on_sandbox_ready {
        command = "npm install"
        timeout = "5m"
      }
      on_sandbox_ready {
        command = "apt-get install -y jq"
        sudo = true
      }
    }
  }
  logging { type = "file" }
}
`)
	f, diags := loadPath(t, path, nil, nil)
	if diags.HasErrors() {
		t.Fatal(render(t, f, diags))
	}
	r := f.Run("fix-issue")
	if r == nil || r.Sandbox != f.Sandboxes[0] || r.Agent != f.Agents[0] {
		t.Fatalf("run or references not resolved: %+v", r)
	}
	b := r.Body
	if r.Name() != "fix-42" || *b.PromptFile != "prompt.md" || b.PromptArgs["ISSUE_NUMBER"] != "42" || *b.Repo != "../repo" ||
		*b.MaxIterations != 5 || *b.IdleTimeout != "10m" || *b.CompletionTimeout != "60s" ||
		!reflect.DeepEqual(b.CopyToWorktree, []string{".env", "node_modules"}) || b.Env["LOG_LEVEL"] != "debug" {
		t.Fatalf("run body %+v", b)
	}
	if bs := b.BranchStrategy; bs.GetAttr("type").AsString() != "branch" || bs.GetAttr("branch").AsString() != "agent/fix-42" {
		t.Fatalf("branch_strategy %#v", bs)
	}
	if n := b.CompletionSignal.LengthInt(); n != 2 {
		t.Fatalf("%d completion signals", n)
	}
	h := b.Hooks
	if len(h.Host.OnWorktreeReady) != 1 || h.Host.OnWorktreeReady[0].Command != "cp .env.example .env" ||
		len(h.Sandbox.OnSandboxReady) != 2 || *h.Sandbox.OnSandboxReady[0].Timeout != "5m" || !*h.Sandbox.OnSandboxReady[1].Sudo {
		t.Fatalf("hooks %+v", h)
	}
	if *b.Logging.Type != "file" {
		t.Fatalf("logging %+v", b.Logging)
	}
	wantAt(t, &hcl.Diagnostic{Subject: ptr(r.AttrRange("branch_strategy.branch"))}, "sanddune.hcl", 19, 49)
	wantAt(t, &hcl.Diagnostic{Subject: ptr(r.AttrRange("hooks"))}, "sanddune.hcl", 28, 3)
}

func ptr[T any](v T) *T { return &v }

func TestFakeRunDefaults(t *testing.T) {
	t.Parallel()
	f := mustLoad(t, header+`run "hello" { prompt = "say hello" }`)
	r := f.Runs[0]
	if r.Name() != "hello" || *r.Body.Prompt != "say hello" || r.Body.MaxIterations != nil || r.Body.Hooks != nil {
		t.Fatalf("%+v", r.Body)
	}
	if r.Sandbox.Address != "sandbox.fakebox.dev" || r.Agent.Address != "agent.fakeagent.script" {
		t.Fatalf("single blocks not used by default: %+v %+v", r.Sandbox, r.Agent)
	}
	if !filepath.IsAbs(f.Dir) {
		t.Fatalf("Dir %q not absolute", f.Dir)
	}
}

func TestFakeReferences(t *testing.T) {
	t.Parallel()
	two := header + `sandbox "fakebox" "second" {
  image = "x"
}
`
	cases := []struct {
		name, src, summary string
		line, col          int
	}{
		{"undeclared", header + `run "r" {
  prompt  = "x"
  sandbox = sandbox.fakebox.deb
}`, "Reference to undeclared sandbox", 11, 13},
		{"not a traversal", header + `run "r" {
  prompt = "x"
  agent  = "agent.fakeagent.script"
}`, "Invalid agent reference", 11, 12},
		{"wrong kind", header + `run "r" {
  prompt  = "x"
  sandbox = agent.fakeagent.script
}`, "Invalid sandbox reference", 11, 13},
		{"ambiguous default", two + `run "r" { prompt = "x" }`, "Missing sandbox", 12, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, diags := load(t, c.src)
			wantAt(t, wantError(t, f, diags, c.summary), "sanddune.hcl", c.line, c.col)
		})
	}
	f, diags := load(t, cases[0].src)
	if d := wantError(t, f, diags, "Reference to undeclared sandbox"); !strings.Contains(d.Detail, "Did you mean sandbox.fakebox.dev?") {
		t.Fatalf("no suggestion in %q", d.Detail)
	}
}

func TestFakeVariablePrecedence(t *testing.T) {
	t.Parallel()
	src := header + `
variable "greeting" { default = "default" }
variable "n" {
  type    = number
  default = 1
}
run "r" {
  prompt         = "say ${var.greeting}"
  max_iterations = var.n
}`
	cases := []struct {
		name   string
		vars   map[string]string
		env    []string
		prompt string
		n      int
	}{
		{"default", nil, nil, "say default", 1},
		{"env", nil, []string{"SANDDUNE_VAR_greeting=env", "SANDDUNE_VAR_n=3"}, "say env", 3},
		{"var wins", map[string]string{"greeting": "flag", "n": "4"}, []string{"SANDDUNE_VAR_greeting=env", "SANDDUNE_VAR_n=3"}, "say flag", 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := mustLoad(t, src, loadOpts{name: "sanddune.hcl", vars: c.vars, env: c.env})
			if b := f.Runs[0].Body; *b.Prompt != c.prompt || *b.MaxIterations != c.n {
				t.Fatalf("prompt %q iterations %d", *b.Prompt, *b.MaxIterations)
			}
		})
	}
}

func TestFakeVariableErrors(t *testing.T) {
	t.Parallel()
	f, diags := load(t, header+`
variable "needed" {}
variable "n" { type = number }
run "r" { prompt = "${var.needed} ${var.nope}" }
`, loadOpts{name: "sanddune.hcl", vars: map[string]string{"n": "many", "extra": "1"}})
	wantAt(t, wantError(t, f, diags, "Missing value for variable"), "sanddune.hcl", 10, 1)
	if d := wantError(t, f, diags, "Invalid value for variable"); d.Detail != `The value of variable "n" from --var is not a valid number: "many" is not an HCL value of that type (such as 42, true, ["a"] or {k = "v"}).` {
		t.Errorf("detail %q: want the value, no HCL internals", d.Detail)
	}
	wantError(t, f, diags, "Value for undeclared variable")
	d := wantError(t, f, diags, "Unsupported attribute")
	wantAt(t, d, "sanddune.hcl", 12, 40)
	if !strings.Contains(d.Detail, `"nope"`) {
		t.Fatalf("detail %q", d.Detail)
	}
}

func TestFakeHooksDecodeErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ body, summary string }{
		{`hooks {
    host {
      on_worktree_ready {
        command = "x"
        sudo = true
      }
    }
  }`, "Unsupported argument"},
		{`hooks {
    sandbox {
      on_worktree_ready { command = "x" }
    }
  }`, "Unsupported block type"},
		{`hooks {
    sandbox {
      on_sandbox_ready { timeout = "1m" }
    }
  }`, "Missing required argument"},
		{`hooks {}
  hooks {}`, "Duplicate hooks block"},
		{`promt = "x"`, "Unsupported argument"},
		{`max_iterations = "many"`, "Unsuitable value type"},
	}
	for _, c := range cases {
		f, diags := load(t, header+`run "r" {
  prompt = "x"
  `+c.body+`
}`)
		wantError(t, f, diags, c.summary)
	}
}

func TestFakeJSONSyntax(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeFile(t, dir, "sanddune.hcl.json", `{
  "variable": {"who": {"default": "world"}},
  "sandbox": {"fakebox": {"dev": {"image": "debian", "mount": [{"host_path": "/a"}]}}},
  "agent": {"fakeagent": {"script": {"command": ["echo"]}}},
  "run": {"hello": {
    "sandbox": "sandbox.fakebox.dev",
    "agent": "agent.fakeagent.script",
    "prompt": "hello ${var.who}",
    "branch_strategy": {"type": "merge-to-head"},
    "hooks": {"sandbox": {"on_sandbox_ready": [{"command": "a"}, {"command": "b", "sudo": true}]}}
  }}
}`)
	f, diags := loadPath(t, path, nil, nil)
	if diags.HasErrors() {
		t.Fatal(render(t, f, diags))
	}
	r := f.Runs[0]
	b := r.Body
	if *b.Prompt != "hello world" || r.Sandbox.Address != "sandbox.fakebox.dev" || b.BranchStrategy.GetAttr("type").AsString() != "merge-to-head" ||
		len(b.Hooks.Sandbox.OnSandboxReady) != 2 || !*b.Hooks.Sandbox.OnSandboxReady[1].Sudo {
		t.Fatalf("%+v", b)
	}
	if n := configOf(t, f, f.Sandboxes[0]).Value.GetAttr("mount").LengthInt(); n != 1 {
		t.Fatalf("%d mounts", n)
	}

	path = writeFile(t, dir, "typo.hcl.json", `{"sandbox": {"fakebox": {"dev": {"image": "x", "imgae": "y"}}}}`)
	f, diags = loadPath(t, path, nil, nil)
	d := wantError(t, f, diags, "Extraneous JSON object property")
	wantAt(t, d, "typo.hcl.json", 1, 48)
	if !strings.Contains(render(t, f, diags), "typo.hcl.json line 1") {
		t.Fatal(render(t, f, diags))
	}
}
