package copilot

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/agentcheck"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit/agentkittest"
)

const session = "e249fdda-06fe-4d25-970e-42546e7bc770"

func TestBuildCommandGolden(t *testing.T) {
	t.Parallel()
	byok := map[string]cty.Value{"model": cty.StringVal("gpt-5.4"), "base_url": cty.StringVal("http://127.0.0.1:8080/v1")}
	agentkittest.CheckCommands(t, New(), "testdata/commands.golden", []agentkittest.CommandCase{
		{Name: "print default model", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "print base_url in sandbox", Attrs: byok, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, SkipPermissions: true, RunsAsRoot: true}},
		{Name: "print model and effort", Attrs: map[string]cty.Value{"model": cty.StringVal("claude-sonnet-4.6"), "effort": cty.StringVal("high")}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "print resume", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, SkipPermissions: true}},
		{Name: "print resume on iteration 2 is ignored", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 2, ResumeSessionID: session}},
		{Name: "print custom binary and env", Attrs: map[string]cty.Value{"binary": cty.StringVal("/opt/copilot/bin/copilot"), "env": cty.MapVal(map[string]cty.Value{"COPILOT_HOME": cty.StringVal("/cfg")})}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "interactive base_url", Attrs: byok, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive}},
		{Name: "interactive in sandbox, resume", Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, SkipPermissions: true, ResumeSessionID: session}},
		{Name: "interactive flag-like prompt", Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "--help me"}},
		{Name: "interactive no prompt", Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "-"}},
	})
}

func TestBuildCommandErrors(t *testing.T) {
	t.Parallel()
	// The CLI has no fork flag; Describe says so, and a fork is refused.
	cfg := agentkittest.Config(t, New(), nil)
	if _, err := New().BuildCommand(t.Context(), sdk.CommandRequest{Config: cfg, Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, ForkSession: true}); err == nil || !strings.Contains(err.Error(), "fork") {
		t.Errorf("fork: %v", err)
	}
}

func TestConfigure(t *testing.T) {
	t.Parallel()
	agentcheck.Configure(t, New(), []agentcheck.Case{
		{Name: "defaults"},
		{Name: "base_url and model", Attrs: map[string]cty.Value{"model": cty.StringVal("gpt-5.4"), "base_url": cty.StringVal("http://127.0.0.1:8080/v1")}},
		{Name: "base_url without model", Attrs: map[string]cty.Value{"base_url": cty.StringVal("http://127.0.0.1:8080/v1")}, Want: []string{"base_url"}},
		{Name: "relative base_url", Attrs: map[string]cty.Value{"model": cty.StringVal("gpt-5.4"), "base_url": cty.StringVal("127.0.0.1:8080")}, Want: []string{"base_url"}},
		{Name: "efforts", Attrs: map[string]cty.Value{"effort": cty.StringVal("xhigh")}},
		{Name: "bad effort", Attrs: map[string]cty.Value{"effort": cty.StringVal("extreme")}, Want: []string{"effort"}},
		{Name: "bad env and binary", Attrs: map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"BAD-KEY": cty.StringVal("")}), "binary": cty.StringVal("")}, Want: []string{"binary", "env"}},
	})
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	d := agentcheck.Describe(t, New(), map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"FOO": cty.StringVal("bar")})})
	want := sdk.AgentDescription{
		RequiredEnv:     [][]string{{"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"}},
		Env:             map[string]string{"FOO": "bar"},
		Sessions:        &sdk.SessionStorage{PathPattern: "{home}/.copilot/session-state/{session_id}/events.jsonl"},
		CaptureSessions: true,
		Resume:          true,

		BypassesPermissions: true,
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("Describe = %+v, want %+v", d, want)
	}
	// Your own provider needs no GitHub token.
	for _, attrs := range []map[string]cty.Value{
		{"model": cty.StringVal("m"), "base_url": cty.StringVal("http://127.0.0.1:8080/v1")},
		{"env": cty.MapVal(map[string]cty.Value{"COPILOT_PROVIDER_BASE_URL": cty.StringVal("http://127.0.0.1:11434/v1")})},
	} {
		d := agentcheck.Describe(t, New(), attrs)
		if d.RequiredEnv != nil {
			t.Errorf("%v still requires %v", attrs, d.RequiredEnv)
		}
		if len(d.Endpoints) != 1 || !strings.HasPrefix(d.Endpoints[0], "127.0.0.1:") {
			t.Errorf("%v: endpoints %v, want the provider's", attrs, d.Endpoints)
		}
	}
}

// TestRewriteRealSession rewrites a session event log written by the
// Copilot CLI 1.0.102 itself (in /home/agent/workspace) and back.
func TestRewriteRealSession(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/session-1.0.102.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	got := string(agentkittest.Rewrite(t, New(), data, "/home/agent/workspace", "/home/me/my repo_v1.2"))
	if n := strings.Count(got, `"/home/me/my repo_v1.2"`); n != 4 || strings.Contains(got, `"/home/agent/workspace"`) {
		t.Errorf("%d cwd fields rewritten, want cwd and gitRoot of the start and the resume:\n%s", n, got)
	}
}
