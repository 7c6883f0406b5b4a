package claude

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/zclconf/go-cty/cty"
)

const session = "3f6c2a9e-8d41-4b7e-9a53-1c0e7d2b6f48"

func TestBuildCommandGolden(t *testing.T) {
	opus := map[string]cty.Value{"model": cty.StringVal("opus"), "effort": cty.StringVal("max")}
	cases := []cmdCase{
		{"print default model", nil, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{"print model and effort", map[string]cty.Value{"model": cty.StringVal("claude-sonnet-4-6"), "effort": cty.StringVal("high")}, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{"print opus max in sandbox", opus, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, SkipPermissions: true}},
		{"print in sandbox as root", opus, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 2, SkipPermissions: true, RunsAsRoot: true}},
		{"print root without sandbox", nil, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, RunsAsRoot: true}},
		{"print resume", nil, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, SkipPermissions: true}},
		{"print resume on iteration 2 is ignored", nil, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 2, ResumeSessionID: session}},
		{"print fork", map[string]cty.Value{"model": cty.StringVal("sonnet")}, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, ForkSession: true}},
		{"print custom binary and env", map[string]cty.Value{"binary": cty.StringVal("/opt/claude/bin/claude"), "env": cty.MapVal(map[string]cty.Value{"CLAUDE_CONFIG_DIR": cty.StringVal("/cfg")})}, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{"interactive without sandbox", opus, sdk.CommandRequest{Mode: sdk.ModeInteractive}},
		{"interactive in sandbox as root", nil, sdk.CommandRequest{Mode: sdk.ModeInteractive, SkipPermissions: true, RunsAsRoot: true}},
		{"interactive resume fork", nil, sdk.CommandRequest{Mode: sdk.ModeInteractive, ResumeSessionID: session, ForkSession: true}},
		{"interactive no prompt", nil, sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "-"}},
	}
	checkGolden(t, "testdata/commands.golden", buildAll(t, cases))
}

func TestBuildCommandErrors(t *testing.T) {
	cfg := testConfig(t, nil)
	for name, req := range map[string]sdk.CommandRequest{
		"fork without session": {Config: cfg, Mode: sdk.ModePrint, Iteration: 1, ForkSession: true},
		"flag-like session id": {Config: cfg, Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: "--help"},
		"unknown mode":         {Config: cfg, Mode: "batch"},
	} {
		if _, err := New().BuildCommand(context.Background(), req); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestConfigure(t *testing.T) {
	checkConfigure(t, []configureCase{
		{"defaults", nil, nil},
		{"opus max", map[string]cty.Value{"model": cty.StringVal("claude-opus-4-8"), "effort": cty.StringVal("max")}, nil},
		{"sonnet max", map[string]cty.Value{"model": cty.StringVal("sonnet"), "effort": cty.StringVal("max")}, []string{"effort"}},
		{"default model max", map[string]cty.Value{"effort": cty.StringVal("max")}, []string{"effort"}},
		{"bad effort", map[string]cty.Value{"effort": cty.StringVal("extreme")}, []string{"effort"}},
		{"bad env and binary", map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"BAD-KEY": cty.StringVal("")}), "binary": cty.StringVal("")}, []string{"binary", "env"}},
	})
}

func TestDescribe(t *testing.T) {
	d, err := New().Describe(context.Background(), testConfig(t, map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"FOO": cty.StringVal("bar")})}))
	if err != nil {
		t.Fatal(err)
	}
	want := sdk.AgentDescription{
		RequiredEnv: [][]string{{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_AUTH_TOKEN"}},
		Env:         map[string]string{"FOO": "bar"},
		Sessions:    &sdk.SessionStorage{PathPattern: "{home}/.claude/projects/{cwd_encoded}/{session_id}.jsonl", EncodeCwd: "claude"},
		Resume:      true,
		Fork:        true,
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("Describe = %+v, want %+v", d, want)
	}
	d, _ = New().Describe(context.Background(), testConfig(t, map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"CLAUDE_CODE_USE_BEDROCK": cty.StringVal("1")})}))
	if d.RequiredEnv != nil {
		t.Errorf("Bedrock still requires %v", d.RequiredEnv)
	}
}

func TestRewriteSession(t *testing.T) {
	in := `{"type":"user","cwd":"/home/agent/workspace","sessionId":"s","message":{"role":"user","content":"hi"}}` + "\n" +
		`{"type":"assistant","cwd":"/home/agent/workspace/src","message":{"content":[]}}` + "\n" +
		`{"type":"summary","summary":"no cwd"}` + "\n" +
		`{"type":"user","cwd":"/home/agent/wor`
	want := `{"type":"user","cwd":"/home/me/my repo_v1.2","sessionId":"s","message":{"role":"user","content":"hi"}}` + "\n" +
		`{"type":"assistant","cwd":"/home/me/my repo_v1.2/src","message":{"content":[]}}` + "\n" +
		`{"type":"summary","summary":"no cwd"}` + "\n" +
		`{"type":"user","cwd":"/home/agent/wor`
	got, err := New().RewriteSession(context.Background(), sdk.RewriteSessionRequest{Data: []byte(in), FromCwd: "/home/agent/workspace", ToCwd: "/home/me/my repo_v1.2"})
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestRewriteRealSession rewrites a session written by Claude Code 2.1.197
// itself (in /tmp) and back.
func TestRewriteRealSession(t *testing.T) {
	data, err := os.ReadFile("testdata/session-2.1.197.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	rewrite := func(data []byte, from, to string) string {
		out, err := New().RewriteSession(context.Background(), sdk.RewriteSessionRequest{Data: data, FromCwd: from, ToCwd: to})
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	got := rewrite(data, "/tmp", "/home/me/my repo_v1.2")
	if n := strings.Count(got, `"cwd":"/home/me/my repo_v1.2"`); n != 4 || strings.Contains(got, `"cwd":"/tmp"`) {
		t.Errorf("%d cwd fields rewritten, want 4:\n%s", n, got)
	}
	if back := rewrite([]byte(got), "/home/me/my repo_v1.2", "/tmp"); back != string(data) {
		t.Error("rewriting back does not give the original session")
	}
}
