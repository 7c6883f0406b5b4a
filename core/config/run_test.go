package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/core"
)

func TestFakeIssueExampleRun(t *testing.T) {
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
	f, diags := Load(t.Context(), path, nil, nil, fakeSource())
	if diags.HasErrors() {
		t.Fatal(render(t, f, diags))
	}
	r := f.Run("fix-issue")
	if r == nil || r.Sandbox != f.Sandboxes[0] || r.Agent != f.Agents[0] {
		t.Fatalf("run or references not resolved: %+v", r)
	}
	got := r.Options
	if got.Sandbox.Address != "sandbox.fakeiso.default" || got.Sandbox.Plugin != "fakeiso" || got.Sandbox.Config.Value.GetAttr("image").AsString() != "debian" {
		t.Fatalf("sandbox ref %+v", got.Sandbox)
	}
	if got.Agent.Address != "agent.fakeagent.opus" || got.Agent.Plugin != "fakeagent" {
		t.Fatalf("agent ref %+v", got.Agent)
	}
	got.Sandbox, got.Agent = core.ProviderRef{}, core.ProviderRef{}
	want := core.RunOptions{
		Name:              "fix-42",
		Repo:              filepath.Join(filepath.Dir(dir), "repo"),
		BaseDir:           dir,
		PromptFile:        filepath.Join(dir, "prompt.md"),
		PromptArgs:        map[string]string{"ISSUE_NUMBER": "42"},
		BranchStrategy:    core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/fix-42"},
		MaxIterations:     5,
		CompletionSignals: []string{"<promise>COMPLETE</promise>", "<promise>ABORTED</promise>"},
		IdleTimeout:       10 * time.Minute,
		CompletionTimeout: 60 * time.Second,
		CopyToWorktree:    []string{".env", "node_modules"},
		Env:               map[string]string{"LOG_LEVEL": "debug"},
		Hooks: core.Hooks{
			HostOnWorktreeReady: []core.Hook{{Command: "cp .env.example .env", Timeout: time.Minute}},
			SandboxOnSandboxReady: []core.Hook{
				{Command: "npm install", Timeout: 5 * time.Minute},
				{Command: "apt-get install -y jq", Timeout: time.Minute, Sudo: true},
			},
		},
		Logging: core.Logging{Mode: core.LogFile},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("run options\n got %+v\nwant %+v", got, want)
	}
}

func TestFakeRunDefaults(t *testing.T) {
	f := mustLoad(t, header+`run "hello" { prompt = "say hello" }`)
	o := f.Runs[0].Options
	if o.Name != "hello" || o.Prompt != "say hello" || o.MaxIterations != 1 ||
		!reflect.DeepEqual(o.CompletionSignals, []string{DefaultCompletionSignal}) ||
		o.IdleTimeout != 10*time.Minute || o.CompletionTimeout != time.Minute || o.Logging.Mode != "" {
		t.Fatalf("defaults not applied: %+v", o)
	}
	if o.Sandbox.Address != "sandbox.fakebox.dev" || o.Agent.Address != "agent.fakeagent.script" {
		t.Fatalf("single blocks not used by default: %+v %+v", o.Sandbox, o.Agent)
	}
	if o.BranchStrategy.Type != "" {
		t.Fatalf("strategy %q: the default is the engine's, by sandbox contract", o.BranchStrategy.Type)
	}
	if !filepath.IsAbs(o.BaseDir) {
		t.Fatalf("BaseDir %q not absolute", o.BaseDir)
	}
}

func TestFakeReferences(t *testing.T) {
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
			if o := f.Runs[0].Options; o.Prompt != c.prompt || o.MaxIterations != c.n {
				t.Fatalf("prompt %q iterations %d", o.Prompt, o.MaxIterations)
			}
		})
	}
}

func TestFakeVariableErrors(t *testing.T) {
	f, diags := load(t, header+`
variable "needed" {}
variable "n" { type = number }
run "r" { prompt = "${var.needed} ${var.nope}" }
`, loadOpts{name: "sanddune.hcl", vars: map[string]string{"n": "many", "extra": "1"}})
	wantAt(t, wantError(t, f, diags, "Missing value for variable"), "sanddune.hcl", 10, 1)
	wantError(t, f, diags, "Invalid value for variable")
	wantError(t, f, diags, "Value for undeclared variable")
	d := wantError(t, f, diags, "Unsupported attribute")
	wantAt(t, d, "sanddune.hcl", 12, 40)
	if !strings.Contains(d.Detail, `"nope"`) {
		t.Fatalf("detail %q", d.Detail)
	}
}

func TestFakePromptRules(t *testing.T) {
	cases := []struct{ name, body, summary string }{
		{"neither", ``, "Missing prompt"},
		{"both", `prompt = "a"
  prompt_file = "p.md"`, "Conflicting prompt arguments"},
		{"args with inline prompt", `prompt = "a"
  prompt_args = { X = "1" }`, "prompt_args need prompt_file"},
		{"builtin override", `prompt_file = "p.md"
  prompt_args = { SOURCE_BRANCH = "main" }`, "Built-in prompt argument"},
		{"missing file", `prompt_file = "missing.md"`, "Prompt file not found"},
		{"empty prompt", `prompt = " "`, "Empty prompt"},
		{"args not strings", `prompt_file = "p.md"
  prompt_args = { X = ["a"] }`, "Incorrect attribute value type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "p.md", "{{X}}")
			path := writeFile(t, dir, "sanddune.hcl", header+"run \"r\" {\n  "+c.body+"\n}\n")
			f, diags := Load(t.Context(), path, nil, nil, fakeSource())
			wantError(t, f, diags, c.summary)
		})
	}
}

func TestFakeRelativePathsResolveAgainstConfigDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "conf/prompts/p.md", "x")
	writeFile(t, dir, "conf/sanddune.hcl", header+`run "r" {
  prompt_file = "prompts/p.md"
  repo        = "."
  env         = { CONF = path.config }
  logging {
    type = "file"
    path = "logs/r.log"
  }
}`)
	t.Chdir(dir)
	f, diags := Load(t.Context(), filepath.Join("conf", "sanddune.hcl"), nil, nil, fakeSource())
	if diags.HasErrors() {
		t.Fatal(render(t, f, diags))
	}
	conf := filepath.Join(dir, "conf")
	o := f.Runs[0].Options
	if o.BaseDir != conf || o.PromptFile != filepath.Join(conf, "prompts/p.md") || o.Repo != conf ||
		o.Logging.Path != filepath.Join(conf, "logs/r.log") || o.Env["CONF"] != conf {
		t.Fatalf("paths not resolved against %s: %+v", conf, o)
	}
}

func TestFakeResumeSession(t *testing.T) {
	f, diags := load(t, header+`run "r" {
  prompt         = "x"
  resume_session = "abc"
  max_iterations = 3
}
run "s" {
  prompt       = "x"
  fork_session = true
}`)
	wantAt(t, wantError(t, f, diags, "resume_session needs max_iterations = 1"), "sanddune.hcl", 11, 20)
	wantError(t, f, diags, "fork_session needs resume_session")

	f = mustLoad(t, header+`run "r" {
  prompt         = "x"
  resume_session = "abc"
  fork_session   = true
}`)
	if o := f.Runs[0].Options; o.ResumeSession != "abc" || !o.ForkSession {
		t.Fatalf("%+v", o)
	}
}

func TestFakeBranchStrategyRules(t *testing.T) {
	cases := []struct {
		name, sandbox, body string
		want                core.BranchStrategy
		summary             string
	}{
		{"default left to the engine", "fakeiso", ``, core.BranchStrategy{}, ""},
		{"string shorthand", "fakebox", `branch_strategy = "merge-to-head"`, core.BranchStrategy{Type: core.StrategyMergeToHead}, ""},
		{"branch", "fakeiso", `branch_strategy = { type = "branch", branch = "agent/x", base_branch = "dev" }`,
			core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/x", BaseBranch: "dev"}, ""},
		{"merge with copy", "fakebox", `branch_strategy = { type = "merge-to-head" }
  copy_to_worktree = [".env"]`, core.BranchStrategy{Type: core.StrategyMergeToHead}, ""},
		{"branch without name", "fakebox", `branch_strategy = { type = "branch" }`, core.BranchStrategy{}, "Missing branch"},
		{"branch on head", "fakebox", `branch_strategy = { type = "head", branch = "x" }`, core.BranchStrategy{}, "Unexpected branch"},
		{"bad type", "fakebox", `branch_strategy = { type = "rebase" }`, core.BranchStrategy{}, "Invalid branch strategy type"},
		{"no type", "fakebox", `branch_strategy = { branch = "x" }`, core.BranchStrategy{}, "Missing branch strategy type"},
		{"typo key", "fakebox", `branch_strategy = { type = "branch", brnach = "x" }`, core.BranchStrategy{}, "Unsupported branch_strategy key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := `sandbox "` + c.sandbox + `" "s" {
  image = "x"
}
agent "fakeagent" "a" {
  command = ["x"]
}
run "r" {
  prompt = "x"
  ` + c.body + `
}`
			f, diags := load(t, src)
			if c.summary != "" {
				d := wantError(t, f, diags, c.summary)
				if d.Subject.Start.Line != 9 && d.Subject.Start.Line != 10 {
					t.Fatalf("diagnostic at %s, want the run's branch_strategy or copy_to_worktree", d.Subject)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(render(t, f, diags))
			}
			if got := f.Runs[0].Options.BranchStrategy; got != c.want {
				t.Fatalf("strategy %+v, want %+v", got, c.want)
			}
		})
	}

	f, diags := load(t, header+`run "r" {
  prompt          = "x"
  branch_strategy = { type = "branch", brnach = "x" }
}`)
	if d := wantError(t, f, diags, "Unsupported branch_strategy key"); !strings.Contains(d.Detail, `Did you mean "branch"?`) {
		t.Fatalf("no suggestion: %q", d.Detail)
	}
}

func TestFakeDurations(t *testing.T) {
	f := mustLoad(t, header+`run "r" {
  prompt             = "x"
  idle_timeout       = "1h30m"
  completion_timeout = "90s"
  hooks {
    host {
      on_sandbox_ready {
        command = "true"
        timeout = "2m"
      }
    }
  }
}`)
	o := f.Runs[0].Options
	if o.IdleTimeout != 90*time.Minute || o.CompletionTimeout != 90*time.Second || o.Hooks.HostOnSandboxReady[0].Timeout != 2*time.Minute {
		t.Fatalf("%+v", o)
	}
	for _, bad := range []string{`"ten minutes"`, `"-1s"`, `"0s"`, `10`} {
		f, diags := load(t, header+`run "r" {
  prompt       = "x"
  idle_timeout = `+bad+`
}`)
		if bad == "10" {
			// A number converts to the string "10", which lacks a unit.
			wantError(t, f, diags, "Invalid duration")
			continue
		}
		wantAt(t, wantError(t, f, diags, "Invalid duration"), "sanddune.hcl", 11, 18)
	}
}

func TestFakeCompletionSignal(t *testing.T) {
	f := mustLoad(t, header+`run "r" {
  prompt            = "x"
  completion_signal = "DONE"
}`)
	if got := f.Runs[0].Options.CompletionSignals; !reflect.DeepEqual(got, []string{"DONE"}) {
		t.Fatalf("%q", got)
	}
	for _, bad := range []string{`[]`, `[""]`, `{ a = 1 }`} {
		f, diags := load(t, header+`run "r" {
  prompt            = "x"
  completion_signal = `+bad+`
}`)
		if !diags.HasErrors() {
			t.Fatalf("%s accepted: %v", bad, f.Runs[0].Options.CompletionSignals)
		}
	}
}

func TestFakeCopyToWorktreePaths(t *testing.T) {
	src := `sandbox "fakeiso" "s" {
  image = "x"
}
agent "fakeagent" "a" {
  command = ["x"]
}
run "r" {
  prompt           = "x"
  copy_to_worktree = %s
}`
	f := mustLoad(t, strings.Replace(src, "%s", `["node_modules", "./config/.env"]`, 1))
	if got := f.Runs[0].Options.CopyToWorktree; !reflect.DeepEqual(got, []string{"node_modules", "config/.env"}) {
		t.Fatalf("%q", got)
	}
	for _, bad := range []string{`["/etc/passwd"]`, `["../x"]`, `["a/../../b"]`, `[""]`, `["."]`} {
		f, diags := load(t, strings.Replace(src, "%s", bad, 1))
		wantAt(t, wantError(t, f, diags, "Invalid copy_to_worktree path"), "sanddune.hcl", 9, 22)
	}
}

func TestFakeHooksAndLogging(t *testing.T) {
	f := mustLoad(t, header+`run "r" {
  prompt = "x"
  hooks {
    host {
      on_worktree_ready { command = "one" }
      on_worktree_ready { command = "two" }
    }
  }
  logging { type = "stdout" }
}`)
	o := f.Runs[0].Options
	if len(o.Hooks.HostOnWorktreeReady) != 2 || o.Hooks.HostOnWorktreeReady[1].Command != "two" || o.Logging.Mode != core.LogStdout {
		t.Fatalf("%+v", o)
	}
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
		{`logging { type = "syslog" }`, "Invalid logging type"},
		{`logging {
    type = "stdout"
    path = "x.log"
  }`, "Unexpected logging path"},
		{`env = { "A=B" = "x" }`, "Invalid env name"},
		{`name = "../evil"`, "Invalid run name"},
		{`max_iterations = 0`, "Invalid max_iterations"},
		{`promt = "x"`, "Unsupported argument"},
	}
	for _, c := range cases {
		f, diags := load(t, header+`run "r" {
  prompt = "x"
  `+c.body+`
}`)
		wantError(t, f, diags, c.summary)
	}
}

func TestFakeDuplicateRunNames(t *testing.T) {
	f, diags := load(t, header+`
run "a" { prompt = "x" }
run "b" {
  prompt = "x"
  name   = "a"
}`)
	wantAt(t, wantError(t, f, diags, "Duplicate run name"), "sanddune.hcl", 13, 12)
}

func TestFakeJSONSyntax(t *testing.T) {
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
	f, diags := Load(t.Context(), path, nil, nil, fakeSource())
	if diags.HasErrors() {
		t.Fatal(render(t, f, diags))
	}
	o := f.Runs[0].Options
	if o.Prompt != "hello world" || o.Sandbox.Address != "sandbox.fakebox.dev" || o.BranchStrategy.Type != core.StrategyMergeToHead ||
		len(o.Hooks.SandboxOnSandboxReady) != 2 || !o.Hooks.SandboxOnSandboxReady[1].Sudo {
		t.Fatalf("%+v", o)
	}
	if n := f.Sandboxes[0].Config.Value.GetAttr("mount").LengthInt(); n != 1 {
		t.Fatalf("%d mounts", n)
	}

	path = writeFile(t, dir, "typo.hcl.json", `{"sandbox": {"fakebox": {"dev": {"image": "x", "imgae": "y"}}}}`)
	f, diags = Load(t.Context(), path, nil, nil, fakeSource())
	d := wantError(t, f, diags, "Extraneous JSON object property")
	wantAt(t, d, "typo.hcl.json", 1, 48)
	if !strings.Contains(render(t, f, diags), "typo.hcl.json line 1") {
		t.Fatal(render(t, f, diags))
	}
}
