package core

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/core/config"
	"github.com/missingstudio/sanddune/core/internal/env"
	"github.com/missingstudio/sanddune/core/pluginhost"
	"github.com/missingstudio/sanddune/sdk"
)

// Plan is tested against fake providers that implement what planning
// calls (Info, ConfigSchema, Configure, Describe) and count the calls;
// nothing is executed.

type fakeSandbox struct {
	sdk.SandboxProvider // not called by Plan
	caps                sdk.SandboxCapabilities
	configures          atomic.Int32
	describes           atomic.Int32
}

func (f *fakeSandbox) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{Kind: sdk.KindSandbox, Sandbox: &f.caps}, nil
}

func (f *fakeSandbox) ConfigSchema(context.Context) (sdk.Schema, error) {
	return sdk.Schema{Attributes: []sdk.Attribute{
		{Name: "image", Type: cty.String},
		{Name: "env", Type: cty.Map(cty.String)},
	}}, nil
}

func (f *fakeSandbox) Configure(_ context.Context, cfg sdk.Config) (sdk.Diagnostics, error) {
	f.configures.Add(1)
	if v := cfg.Value.GetAttr("image"); !v.IsNull() && v.AsString() == "bad" {
		return sdk.Diagnostics{{Severity: sdk.SeverityError, Summary: "No such image", Attribute: "image"}}, nil
	}
	return nil, nil
}

// Describe returns the block's env, as the plugins do.
func (f *fakeSandbox) Describe(_ context.Context, cfg sdk.Config) (sdk.SandboxDescription, error) {
	f.describes.Add(1)
	var c struct {
		Env map[string]string `cty:"env"`
	}
	err := cfg.Decode(&c)
	return sdk.SandboxDescription{Env: c.Env}, err
}

type fakeAgent struct {
	sdk.AgentProvider // not called by Plan
	desc              sdk.AgentDescription
	configures        atomic.Int32
	describes         atomic.Int32
}

func (f *fakeAgent) Info(context.Context) (sdk.Info, error) {
	return sdk.Info{Kind: sdk.KindAgent}, nil
}

func (f *fakeAgent) ConfigSchema(context.Context) (sdk.Schema, error) {
	return sdk.Schema{Attributes: []sdk.Attribute{{Name: "env", Type: cty.Map(cty.String)}}}, nil
}

func (f *fakeAgent) Configure(context.Context, sdk.Config) (sdk.Diagnostics, error) {
	f.configures.Add(1)
	return nil, nil
}

// Describe returns the agent's description with the block's env, as the
// plugins do.
func (f *fakeAgent) Describe(_ context.Context, cfg sdk.Config) (sdk.AgentDescription, error) {
	f.describes.Add(1)
	var c struct {
		Env map[string]string `cty:"env"`
	}
	err := cfg.Decode(&c)
	d := f.desc
	d.Env = c.Env
	return d, err
}

// fakePlugins serves the sandboxes "box" (bind-mount, no sudo) and "iso"
// (isolated) and the agents "cli" (no sessions) and "sess" (resumable).
type fakePlugins struct {
	box, iso  *fakeSandbox
	cli, sess *fakeAgent
	resolves  atomic.Int32
}

func newPlugins() *fakePlugins {
	storage := &sdk.SessionStorage{PathPattern: "{cwd}/.sessions/{session_id}.json"}
	return &fakePlugins{
		box:  &fakeSandbox{caps: sdk.SandboxCapabilities{Contract: sdk.ContractBindMount}},
		iso:  &fakeSandbox{caps: sdk.SandboxCapabilities{Contract: sdk.ContractIsolated}},
		cli:  &fakeAgent{},
		sess: &fakeAgent{desc: sdk.AgentDescription{Resume: true, Sessions: storage}},
	}
}

func (p *fakePlugins) Sandbox(_ context.Context, name string) (sdk.SandboxProvider, pluginhost.Component, error) {
	p.resolves.Add(1)
	sb := map[string]*fakeSandbox{"box": p.box, "iso": p.iso}[name]
	if sb == nil {
		return nil, pluginhost.Component{}, &pluginhost.NotFoundError{Kind: sdk.KindSandbox, Label: name, Known: []string{"box", "iso"}}
	}
	info, _ := sb.Info(context.Background())
	return sb, pluginhost.Component{Info: info}, nil
}

func (p *fakePlugins) Agent(_ context.Context, name string) (sdk.AgentProvider, pluginhost.Component, error) {
	p.resolves.Add(1)
	a := map[string]*fakeAgent{"cli": p.cli, "sess": p.sess}[name]
	if a == nil {
		return nil, pluginhost.Component{}, &pluginhost.NotFoundError{Kind: sdk.KindAgent, Label: name, Known: []string{"cli", "sess"}}
	}
	return a, pluginhost.Component{Info: sdk.Info{Kind: sdk.KindAgent}}, nil
}

// repoWith makes a git repository on branch main with one commit and the
// config file src in it; it returns the config path.
func repoWith(t *testing.T, src string, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "initial"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for i := 0; i+1 < len(files); i += 2 {
		p := filepath.Join(dir, files[i])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(files[i+1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "sanddune.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// plan loads the config at path and plans it.
func plan(t *testing.T, path string, plugins *fakePlugins, sel Selection) (*RunPlan, error) {
	t.Helper()
	f, diags := config.Load(path, nil, nil)
	if diags.HasErrors() {
		t.Fatalf("load: %v", diags)
	}
	return Plan(context.Background(), Config{File: f, Plugins: plugins, Run: RunOptions{Repo: filepath.Dir(path)}}, sel)
}

// only returns the one diagnostic whose summary contains summary, failing
// when there is not exactly one.
func only(t *testing.T, ds Diagnostics, summary string) Diagnostic {
	t.Helper()
	var found []Diagnostic
	for _, d := range ds {
		if strings.Contains(d.Summary, summary) {
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d diagnostics %q, want exactly 1, in:\n%v", len(found), summary, ds)
	}
	return found[0]
}

func at(t *testing.T, d Diagnostic, line, col int) {
	t.Helper()
	if d.Subject == nil || d.Subject.Start.Line != line || d.Subject.Start.Column != col {
		t.Fatalf("%q at %v, want line %d col %d", d.Summary, d.Subject, line, col)
	}
}

const blocks = `sandbox "box" "dev" {}
sandbox "iso" "vm" {}
agent "cli" "a" {}
agent "sess" "s" {}
`

// TestFakeSudoHookReportedOnce: a sudo hook on a sandbox without sudo is
// one error, at its sudo attribute.
func TestFakeSudoHookReportedOnce(t *testing.T) {
	t.Parallel()
	path := repoWith(t, blocks+`run "r" {
  sandbox = sandbox.box.dev
  agent   = agent.cli.a
  prompt  = "x"
  hooks {
    sandbox {
      on_sandbox_ready {
        command = "apt-get install -y jq"
        sudo    = true
      }
    }
  }
}
`)
	p, err := plan(t, path, newPlugins(), Selection{Strict: true})
	if err == nil {
		t.Fatal("a sudo hook on a sandbox without sudo was accepted")
	}
	d := only(t, p.Diagnostics, "sudo")
	at(t, d, 13, 19)
	if len(p.Diagnostics.Errors()) != 1 {
		t.Fatalf("want one error, got:\n%v", p.Diagnostics)
	}
}

// TestFakeRunProblemsInOnePass: a value that cannot be read (a duration)
// does not hide the run's other problems; each is reported once, at its
// attribute (across instances and steps: TestFakeBlockProblemsOnceAcrossInstancesAndSteps).
func TestFakeRunProblemsInOnePass(t *testing.T) {
	t.Parallel()
	path := repoWith(t, blocks+`run "r" {
  sandbox           = sandbox.box.dev
  agent             = agent.cli.a
  prompt_file       = "missing.md"
  idle_timeout      = "soon"
  env               = { "A=B" = "x" }
  completion_signal = [""]
  max_iterations    = 0
}
`)
	p, err := plan(t, path, newPlugins(), Selection{Strict: true})
	if err == nil {
		t.Fatal("accepted")
	}
	at(t, only(t, p.Diagnostics, "Invalid prompt"), 8, 23)
	at(t, only(t, p.Diagnostics, "Invalid duration"), 9, 23)
	at(t, only(t, p.Diagnostics, "Invalid env"), 10, 23)
	at(t, only(t, p.Diagnostics, "Empty completion signal"), 11, 23)
	at(t, only(t, p.Diagnostics, "Invalid max_iterations"), 12, 23)
	if n := len(p.Diagnostics.Errors()); n != 5 {
		t.Fatalf("%d errors, want 5:\n%v", n, p.Diagnostics)
	}
}

// TestFakeBlockProblemsOnceAcrossInstancesAndSteps: a for_each block is
// checked once, not once per instance, and a session's values once, not
// once per step: a bad attribute in a for_each run with 3 instances and
// in a session with 3 steps is one error, at the attribute. What differs
// between instances (an expression of each) or steps (a step's own
// attribute) is reported where it is wrong, and what depends on the
// agent once per agent block. An unused prompt argument of a for_each
// block is one warning too.
func TestFakeBlockProblemsOnceAcrossInstancesAndSteps(t *testing.T) {
	t.Parallel()
	const missing = "SANDDUNE_TEST_NEVER_SET_TOKEN"
	path := repoWith(t, blocks+`run "r" {
  sandbox            = sandbox.box.dev
  agent              = agent.cli.a
  for_each           = ["x", "y", "z"]
  prompt             = "x"
  idle_timeout       = "soon"
  env                = { "A=B" = "x", T = each.value == "z" ? "a\u0000b" : "ok" }
  completion_timeout = each.value == "z" ? "later" : "5m"
  branch_strategy    = { type = "branch", branch = "r/${each.value}" }
}
session "s" {
  sandbox = sandbox.box.dev
  env     = { "C=D" = "x" }
  step "one" {
    agent        = agent.cli.a
    prompt       = "x"
    idle_timeout = "never"
  }
  step "two" {
    agent  = agent.cli.a
    prompt = "x"
  }
  step "three" {
    agent        = agent.sess.s
    prompt       = "x"
    idle_timeout = "never"
  }
}
run "w" {
  sandbox         = sandbox.box.dev
  agent           = agent.sess.s
  for_each        = ["x", "y", "z"]
  prompt_file     = "w.md"
  prompt_args     = { ITEM = each.value, EXTRA = "x" }
  branch_strategy = { type = "branch", branch = "w/${each.value}" }
}
`, "w.md", "do {{ITEM}}")
	plugins := newPlugins()
	plugins.cli.desc.RequiredEnv = [][]string{{missing}}
	p, err := plan(t, path, plugins, Selection{Strict: true})
	if err == nil {
		t.Fatal("accepted")
	}
	ds := p.Diagnostics
	find := func(block, attr, detail string) []Diagnostic {
		var out []Diagnostic
		for _, d := range ds {
			if d.Block == block && d.Attribute == attr && strings.Contains(d.Detail, detail) {
				out = append(out, d)
			}
		}
		return out
	}
	for _, tc := range []struct {
		block, attr, detail string
		line, col           int
	}{
		{"run.r", "idle_timeout", "soon", 10, 24},
		{"run.r", "env", `"A=B" is not a variable name`, 11, 24},
		{"run.r", "env.T", "NUL", 11, 43},
		{"run.w", "prompt_args", `"EXTRA" is set but not used`, 38, 21},
		{"run.r", "completion_timeout", "later", 12, 24},
		{"run.r", "env", missing, 11, 24},
		{"session.s", "env", `"C=D" is not a variable name`, 17, 13},
		{"session.s", "env", missing, 17, 13},
		{"session.s", "step.one.idle_timeout", "never", 21, 20},
		{"session.s", "step.three.idle_timeout", "never", 30, 20},
	} {
		found := find(tc.block, tc.attr, tc.detail)
		if len(found) != 1 {
			t.Errorf("%s %s %q: reported %d times, want once, in:\n%v", tc.block, tc.attr, tc.detail, len(found), ds)
			continue
		}
		at(t, found[0], tc.line, tc.col)
	}
	if n := len(ds.Errors()); n != 9 || len(ds) != 10 {
		t.Fatalf("%d errors and %d warnings, want 9 and 1:\n%v", n, len(ds)-n, ds)
	}
}

// TestFakeResumeOnAgentWithoutSessionsReportedOnce: resume_session on an
// agent that cannot resume is one error, at resume_session.
func TestFakeResumeOnAgentWithoutSessionsReportedOnce(t *testing.T) {
	t.Parallel()
	path := repoWith(t, blocks+`run "r" {
  sandbox        = sandbox.box.dev
  agent          = agent.cli.a
  prompt         = "x"
  resume_session = "abc"
}
`)
	p, err := plan(t, path, newPlugins(), Selection{Strict: true})
	if err == nil {
		t.Fatal("resume_session on an agent without sessions was accepted")
	}
	at(t, only(t, p.Diagnostics, "resume"), 9, 20)
	if len(p.Diagnostics.Errors()) != 1 {
		t.Fatalf("want one error, got:\n%v", p.Diagnostics)
	}
}

// TestFakeBrokenUnselectedRunIsAWarning: run a plans although run b of the
// same file has an env overlap; b's problem is a warning, reported once,
// and an error when everything is checked (validate).
func TestFakeBrokenUnselectedRunIsAWarning(t *testing.T) {
	t.Parallel()
	path := repoWith(t, `sandbox "box" "dev" {}
sandbox "box" "shared" {
  env = { TOKEN = "s" }
}
agent "cli" "a" {}
agent "cli" "shared" {
  env = { TOKEN = "a" }
}
run "a" {
  sandbox = sandbox.box.dev
  agent   = agent.cli.a
  prompt  = "x"
}
run "b" {
  sandbox = sandbox.box.shared
  agent   = agent.cli.shared
  prompt  = "x"
}
`)
	p, err := plan(t, path, newPlugins(), Selection{Runs: []string{"a"}})
	if err != nil {
		t.Fatalf("run a refused because of run b: %v", err)
	}
	if len(p.Runs) != 1 || p.Runs[0].Name != "a" {
		t.Fatalf("planned %v, want run a only", p.Runs)
	}
	d := only(t, p.Diagnostics, "Invalid env")
	var overlap *env.OverlapError
	if d.Severity != Warning || d.Block != "run.b" || !errors.As(d, &overlap) {
		t.Fatalf("b's overlap: %+v", d)
	}

	p, err = plan(t, path, newPlugins(), Selection{Strict: true})
	if err == nil || len(p.Runs) != 0 {
		t.Fatal("validate accepted run b")
	}
	if d := only(t, p.Diagnostics, "Invalid env"); d.Severity != Error {
		t.Fatalf("validate: %+v", d)
	}
}

// TestFakeEachProviderOnce: each block is configured and described once, however many runs use it; each plugin resolved
// once per block.
func TestFakeEachProviderOnce(t *testing.T) {
	t.Parallel()
	path := repoWith(t, `sandbox "box" "dev" {}
agent "sess" "s" {}
run "a" { prompt = "x" }
run "b" { prompt = "y" }
run "c" { prompt = "z" }
`)
	pl := newPlugins()
	p, err := plan(t, path, pl, Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 3 || pl.box.configures.Load() != 1 || pl.box.describes.Load() != 1 || pl.sess.configures.Load() != 1 || pl.sess.describes.Load() != 1 || pl.resolves.Load() != 2 {
		t.Fatalf("%d runs; sandbox configured %d and described %d times, agent configured %d and described %d times, %d resolves",
			len(p.Runs), pl.box.configures.Load(), pl.box.describes.Load(), pl.sess.configures.Load(), pl.sess.describes.Load(), pl.resolves.Load())
	}
}

// TestFakePluginDiagnosticsAtAttribute: what a plugin reports lands on
// the attribute it names; an unknown plugin gets a did-you-mean.
func TestFakePluginDiagnosticsAtAttribute(t *testing.T) {
	t.Parallel()
	path := repoWith(t, `sandbox "box" "dev" {
  image = "bad"
}
sandbox "bx" "typo" {}
agent "cli" "a" {}
run "r" {
  sandbox = sandbox.box.dev
  prompt  = "x"
}
`)
	p, _ := plan(t, path, newPlugins(), Selection{Strict: true})
	at(t, only(t, p.Diagnostics, "No such image"), 2, 11)
	d := only(t, p.Diagnostics, `Unknown sandbox plugin "bx"`)
	at(t, d, 4, 9)
	if !strings.Contains(d.Detail, `Did you mean "box"?`) || !strings.Contains(d.Detail, "SANDDUNE_PLUGIN_PATH") {
		t.Fatalf("detail %q", d.Detail)
	}
	// For `run r` the unused typo block is a warning, the image error stays.
	p, err := plan(t, path, newPlugins(), Selection{Runs: []string{"r"}})
	if err == nil || only(t, p.Diagnostics, "Unknown sandbox").Severity != Warning || only(t, p.Diagnostics, "No such image").Severity != Error {
		t.Fatalf("err %v, diagnostics:\n%v", err, p.Diagnostics)
	}
}

// TestFakeRunChecks: each run check, at its attribute.
func TestFakeRunChecks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, sandbox, body, summary string
		line                         int
	}{
		{"both prompts", "box", `prompt = "a"
  prompt_file = "p.md"`, "Invalid prompt", 9},
		{"args with inline prompt", "box", `prompt = "a"
  prompt_args = { X = "1" }`, "Invalid prompt", 8},
		{"builtin override", "box", `prompt_file = "p.md"
  prompt_args = { SOURCE_BRANCH = "main", X = "1" }`, "Invalid prompt", 8},
		{"missing prompt file", "box", `prompt_file = "missing.md"`, "Invalid prompt", 8},
		{"device prompt file", "box", `prompt_file = "/dev/zero"`, "Invalid prompt", 8},
		{"fifo prompt file", "box", `prompt_file = "fifo"`, "Invalid prompt", 8},
		{"empty prompt", "box", `prompt = " "`, "Empty prompt", 8},
		{"branch without name", "box", `prompt = "x"
  branch_strategy = { type = "branch" }`, "Invalid branch strategy", 9},
		{"branch on head", "box", `prompt = "x"
  branch_strategy = { type = "head", branch = "x" }`, "Invalid branch strategy", 9},
		{"bad type", "box", `prompt = "x"
  branch_strategy = "rebase"`, "Invalid branch strategy", 9},
		{"head on isolated", "iso", `prompt = "x"
  branch_strategy = "head"`, "Invalid branch strategy", 9},
		{"typo key", "box", `prompt = "x"
  branch_strategy = { type = "branch", brnach = "x" }`, "Unsupported branch_strategy key", 9},
		{"copy with head", "box", `prompt = "x"
  copy_to_worktree = [".env"]`, "Invalid branch strategy", 9},
		{"copy outside", "iso", `prompt = "x"
  copy_to_worktree = ["../x"]`, "Invalid copy_to_worktree path", 9},
		{"copy into itself", "iso", `prompt = "x"
  copy_to_worktree = [".sanddune"]`, "Invalid copy_to_worktree path", 9},
		{"bad duration", "box", `prompt = "x"
  idle_timeout = "ten minutes"`, "Invalid duration", 9},
		{"zero duration", "box", `prompt = "x"
  completion_timeout = "0s"`, "Invalid duration", 9},
		{"empty signal", "box", `prompt = "x"
  completion_signal = [""]`, "Empty completion signal", 9},
		{"no signals", "box", `prompt = "x"
  completion_signal = []`, "Invalid completion_signal", 9},
		{"zero iterations", "box", `prompt = "x"
  max_iterations = 0`, "Invalid max_iterations", 9},
		{"zero token budget", "box", `prompt = "x"
  token_budget = 0`, "Invalid token_budget", 9},
		{"resume with iterations", "box", `prompt = "x"
  agent = agent.sess.s
  resume_session = "abc"
  max_iterations = 3`, "resume_session needs max_iterations = 1", 9},
		{"fork without resume", "box", `prompt = "x"
  fork_session = true`, "fork_session needs resume_session", 9},
		{"session not found", "box", `prompt = "x"
  agent = agent.sess.s
  resume_session = "abc"`, "Session not found", 9},
		{"env name", "box", `prompt = "x"
  env = { "A=B" = "x" }`, "Invalid env", 9},
		{"run name", "box", `prompt = "x"
  name = "../evil"`, "Invalid run name", 9},
		// What validate accepts, run can start: the runtime's limits.
		{"run name too long", "box", `prompt = "x"
  name = "` + strings.Repeat("n", 255) + `"`, "Run name too long", 9},
		{"env NUL", "box", `prompt = "x"
  env = { NUL = "a\u0000b" }`, "Invalid env", 9},
		{"env too big", "box", `prompt = "x"
  env = { BIG = "` + strings.Repeat("v", 300<<10) + `" }`, "Invalid env", 9},
		{"branch too long", "box", `prompt = "x"
  branch_strategy = { type = "branch", branch = "` + strings.Repeat("b", 300) + `" }`, "branch", 9},
		{"branch with a space", "box", `prompt = "x"
  branch_strategy = { type = "branch", branch = "a b" }`, "branch", 9},
		{"bad timeout", "box", `prompt = "x"
  timeouts { create_sandbox = "soon" }`, "Invalid duration", 9},
		{"unknown timeout", "box", `prompt = "x"
  timeouts { create_sandbx = "1m" }`, "Unsupported timeout", 9},
		{"logging type", "box", `prompt = "x"
  logging { type = "syslog" }`, "Invalid logging type", 9},
		{"logging path", "box", `prompt = "x"
  logging {
    type = "stdout"
    path = "x.log"
  }`, "Unexpected logging path", 9},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := repoWith(t, blocks+`run "r" {
  sandbox = sandbox.`+map[string]string{"box": "box.dev", "iso": "iso.vm"}[c.sandbox]+`
  agent   = agent.cli.a
  `+strings.Replace(c.body, "  agent = agent.sess.s\n", "", 1)+`
}
`, "p.md", "{{X}}")
			if err := syscall.Mkfifo(filepath.Join(filepath.Dir(path), "fifo"), 0o600); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(c.body, "agent.sess.s") {
				src, _ := os.ReadFile(path)
				os.WriteFile(path, []byte(strings.Replace(string(src), "agent.cli.a", "agent.sess.s", 1)), 0o644)
			}
			p, err := plan(t, path, newPlugins(), Selection{Strict: true})
			if err == nil {
				t.Fatalf("accepted; diagnostics:\n%v", p.Diagnostics)
			}
			d := only(t, p.Diagnostics, c.summary)
			if d.Subject == nil || d.Subject.Start.Line != c.line {
				t.Fatalf("%q at %v, want line %d", d.Summary, d.Subject, c.line)
			}
		})
	}
}

// TestFakeRunDefaultsAndValues: a valid run gets its values and the
// defaults; relative paths resolve against the config's directory.
func TestFakeRunDefaultsAndValues(t *testing.T) {
	t.Parallel()
	path := repoWith(t, blocks+`run "full" {
  sandbox            = sandbox.iso.vm
  agent              = agent.cli.a
  name               = "fix-42"
  prompt_file        = "prompts/p.md"
  prompt_args        = { X = "42" }
  branch_strategy    = { type = "branch", branch = "agent/fix-42", base_branch = "main" }
  max_iterations     = 5
  completion_signal  = ["A", "B"]
  idle_timeout       = "1h30m"
  completion_timeout = "90s"
  copy_to_worktree   = ["./config/.env"]
  env                = { LOG_LEVEL = "debug" }
  hooks {
    host {
      on_worktree_ready { command = "one" }
    }
    sandbox {
      on_sandbox_ready {
        command = "two"
        timeout = "5m"
      }
    }
  }
  logging {
    path = "logs/r.log"
  }
  timeouts {
    merge = "3m"
  }
}
run "plain" {
  sandbox = sandbox.box.dev
  agent   = agent.cli.a
  prompt  = "x"
}
`, "prompts/p.md", "{{X}}")
	p, err := plan(t, path, newPlugins(), Selection{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	full, plain := p.planned[0].Spec, p.planned[1].Spec
	if full.Name != "fix-42" || full.Prompt.File != filepath.Join(dir, "prompts/p.md") || full.MaxIterations != 5 ||
		!reflect.DeepEqual(full.CompletionSignals, []string{"A", "B"}) || full.IdleTimeout != 90*time.Minute || full.CompletionTimeout != 90*time.Second ||
		!reflect.DeepEqual(full.CopyPaths, []string{"config/.env"}) || full.Env["LOG_LEVEL"] != "debug" ||
		full.Strategy.Type != StrategyBranch || full.Strategy.Branch != "agent/fix-42" || full.Strategy.BaseBranch != "main" ||
		len(full.Hooks.HostOnWorktreeReady) != 1 || full.Hooks.SandboxOnSandboxReady[0].Timeout != 5*time.Minute ||
		full.Logging.Mode != LogFile || full.Logging.Path != filepath.Join(dir, "logs/r.log") ||
		full.Timeouts.Merge != 3*time.Minute || full.Timeouts.CreateSandbox != DefaultTimeouts.CreateSandbox {
		t.Fatalf("full run planned as %+v", full)
	}
	if plain.MaxIterations != 1 || !reflect.DeepEqual(plain.CompletionSignals, []string{DefaultCompletionSignal}) ||
		plain.IdleTimeout != DefaultIdleTimeout || plain.CompletionTimeout != DefaultCompletionTimeout ||
		plain.Strategy.Type != StrategyHead || plain.Strategy.TargetBranch != "main" {
		t.Fatalf("defaults not applied: %+v", plain)
	}
}

// TestFakeDuplicateRunNames: two runs may not share a name.
func TestFakeDuplicateRunNames(t *testing.T) {
	t.Parallel()
	path := repoWith(t, `sandbox "box" "dev" {}
agent "cli" "a" {}
run "a" { prompt = "x" }
run "b" {
  prompt = "x"
  name   = "a"
}
`)
	p, _ := plan(t, path, newPlugins(), Selection{Strict: true})
	at(t, only(t, p.Diagnostics, "Duplicate run name"), 6, 12)
}

// TestFakeParallelRunsOnOneBranch: with Parallel > 1, two selected runs
// on one branch are refused before anything starts.
func TestFakeParallelRunsOnOneBranch(t *testing.T) {
	t.Parallel()
	path := repoWith(t, `sandbox "box" "dev" {}
agent "cli" "a" {}
run "a" {
  prompt          = "x"
  branch_strategy = { type = "branch", branch = "agent/x" }
}
run "b" {
  prompt          = "x"
  branch_strategy = { type = "branch", branch = "agent/x" }
}
`)
	f, _ := config.Load(path, nil, nil)
	_, err := Plan(context.Background(), Config{File: f, Plugins: newPlugins(), Run: RunOptions{Repo: filepath.Dir(path)}, Parallel: 2}, Selection{})
	if err == nil || !strings.Contains(err.Error(), `runs "a" and "b" both work on branch agent/x`) {
		t.Fatalf("err = %v", err)
	}
}
