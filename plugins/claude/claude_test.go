package claude

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

const session = "3f6c2a9e-8d41-4b7e-9a53-1c0e7d2b6f48"

func TestBuildCommandGolden(t *testing.T) {
	t.Parallel()
	opus := map[string]cty.Value{"model": cty.StringVal("opus"), "effort": cty.StringVal("max")}
	agentkittest.CheckCommands(t, New(), "testdata/commands.golden", []agentkittest.CommandCase{
		{Name: "print default model", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "print base_url as root", Attrs: map[string]cty.Value{"base_url": cty.StringVal("http://127.0.0.1:8080/gateway")}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, SkipPermissions: true, RunsAsRoot: true}},
		{Name: "interactive base_url", Attrs: map[string]cty.Value{"base_url": cty.StringVal("http://127.0.0.1:8080/gateway")}, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive}},
		{Name: "print model and effort", Attrs: map[string]cty.Value{"model": cty.StringVal("claude-sonnet-4-6"), "effort": cty.StringVal("high")}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "print opus max in sandbox", Attrs: opus, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, SkipPermissions: true}},
		{Name: "print in sandbox as root", Attrs: opus, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 2, SkipPermissions: true, RunsAsRoot: true}},
		{Name: "print root without sandbox", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, RunsAsRoot: true}},
		{Name: "print resume", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, SkipPermissions: true}},
		{Name: "print resume on iteration 2 is ignored", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 2, ResumeSessionID: session}},
		{Name: "print fork", Attrs: map[string]cty.Value{"model": cty.StringVal("sonnet")}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, ForkSession: true}},
		{Name: "print custom binary and env", Attrs: map[string]cty.Value{"binary": cty.StringVal("/opt/claude/bin/claude"), "env": cty.MapVal(map[string]cty.Value{"CLAUDE_CONFIG_DIR": cty.StringVal("/cfg")})}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "interactive without sandbox", Attrs: opus, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive}},
		{Name: "interactive in sandbox as root", Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, SkipPermissions: true, RunsAsRoot: true}},
		{Name: "interactive resume fork", Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, ResumeSessionID: session, ForkSession: true}},
		{Name: "interactive no prompt", Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "-"}},
	})
}

func TestBuildCommandErrors(t *testing.T) {
	t.Parallel()
}

func TestConfigure(t *testing.T) {
	t.Parallel()
	agentcheck.Configure(t, New(), []agentcheck.Case{
		{Name: "defaults"},
		{Name: "base_url", Attrs: map[string]cty.Value{"base_url": cty.StringVal("http://127.0.0.1:8080/gateway")}},
		{Name: "relative base_url", Attrs: map[string]cty.Value{"base_url": cty.StringVal("127.0.0.1:8080")}, Want: []string{"base_url"}},
		{Name: "opus max", Attrs: map[string]cty.Value{"model": cty.StringVal("claude-opus-4-8"), "effort": cty.StringVal("max")}},
		{Name: "sonnet max", Attrs: map[string]cty.Value{"model": cty.StringVal("sonnet"), "effort": cty.StringVal("max")}, Want: []string{"effort"}},
		{Name: "default model max", Attrs: map[string]cty.Value{"effort": cty.StringVal("max")}, Want: []string{"effort"}},
		{Name: "bad effort", Attrs: map[string]cty.Value{"effort": cty.StringVal("extreme")}, Want: []string{"effort"}},
		{Name: "bad env and binary", Attrs: map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"BAD-KEY": cty.StringVal("")}), "binary": cty.StringVal("")}, Want: []string{"binary", "env"}},
	})
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	d := agentcheck.Describe(t, New(), map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"FOO": cty.StringVal("bar")})})
	want := sdk.AgentDescription{
		RequiredEnv:     [][]string{{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"}},
		Env:             map[string]string{"FOO": "bar"},
		Sessions:        &sdk.SessionStorage{PathPattern: "{home}/.claude/projects/{cwd_encoded}/{session_id}.jsonl"},
		CaptureSessions: true,
		Resume:          true,
		Fork:            true,

		BypassesPermissions: true,
		Endpoints:           []string{"api.anthropic.com"},
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("Describe = %+v, want %+v", d, want)
	}
	d = agentcheck.Describe(t, New(), map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"ANTHROPIC_BASE_URL": cty.StringVal("http://gw.internal:8080/v1")})})
	if want := []string{"gw.internal:8080"}; !reflect.DeepEqual(d.Endpoints, want) {
		t.Errorf("with ANTHROPIC_BASE_URL in env: endpoints %v, want %v", d.Endpoints, want)
	}
	d = agentcheck.Describe(t, New(), map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"CLAUDE_CODE_USE_BEDROCK": cty.StringVal("1")})})
	if d.RequiredEnv != nil {
		t.Errorf("Bedrock still requires %v", d.RequiredEnv)
	}
}

func TestRewriteSession(t *testing.T) {
	t.Parallel()
	in := `{"type":"user","cwd":"/home/agent/workspace","sessionId":"s","message":{"role":"user","content":"hi"}}` + "\n" +
		`{"type":"assistant","cwd":"/home/agent/workspace/src","message":{"content":[]}}` + "\n" +
		`{"type":"summary","summary":"no cwd"}` + "\n" +
		`{"type":"user","cwd":"/home/agent/wor`
	want := `{"type":"user","cwd":"/home/me/my repo_v1.2","sessionId":"s","message":{"role":"user","content":"hi"}}` + "\n" +
		`{"type":"assistant","cwd":"/home/me/my repo_v1.2/src","message":{"content":[]}}` + "\n" +
		`{"type":"summary","summary":"no cwd"}` + "\n" +
		`{"type":"user","cwd":"/home/agent/wor`
	if got := agentkittest.Rewrite(t, New(), []byte(in), "/home/agent/workspace", "/home/me/my repo_v1.2"); string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestRewriteRealSession rewrites a session written by Claude Code 2.1.197
// itself (in /tmp) and back.
func TestRewriteRealSession(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/session-2.1.197.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	got := string(agentkittest.Rewrite(t, New(), data, "/tmp", "/home/me/my repo_v1.2"))
	if n := strings.Count(got, `"cwd":"/home/me/my repo_v1.2"`); n != 4 || strings.Contains(got, `"cwd":"/tmp"`) {
		t.Errorf("%d cwd fields rewritten, want 4:\n%s", n, got)
	}
}
