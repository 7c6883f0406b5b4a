package gemini

import (
	"context"
	"reflect"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/agentcheck"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit/agentkittest"
)

const session = "ca2d12da-70b1-4444-b697-72c56a00f629"

func TestBuildCommandGolden(t *testing.T) {
	t.Parallel()
	gateway := map[string]cty.Value{"base_url": cty.StringVal("http://127.0.0.1:8080/gateway")}
	agentkittest.CheckCommands(t, New(), "testdata/commands.golden", []agentkittest.CommandCase{
		{Name: "print default model", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "print in sandbox", Attrs: map[string]cty.Value{"model": cty.StringVal("gemini-2.5-pro")}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, SkipPermissions: true}},
		{Name: "print base_url", Attrs: gateway, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, SkipPermissions: true}},
		{Name: "print resume", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, SkipPermissions: true}},
		{Name: "print resume on iteration 2 is ignored", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 2, ResumeSessionID: session}},
		{Name: "print fork", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, ForkSession: true, SkipPermissions: true}},
		{Name: "print fork base_url", Attrs: gateway, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, ForkSession: true}},
		{Name: "print custom binary and env", Attrs: map[string]cty.Value{"binary": cty.StringVal("/opt/gemini/bin/gemini"), "env": cty.MapVal(map[string]cty.Value{"GEMINI_CLI_HOME": cty.StringVal("/cfg")})}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "interactive", Attrs: map[string]cty.Value{"model": cty.StringVal("gemini-2.5-flash")}, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive}},
		{Name: "interactive in sandbox base_url", Attrs: gateway, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, SkipPermissions: true}},
		{Name: "interactive resume", Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, ResumeSessionID: session}},
		{Name: "interactive fork", Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, ResumeSessionID: session, ForkSession: true}},
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
		{Name: "model and base_url", Attrs: map[string]cty.Value{"model": cty.StringVal("gemini-2.5-pro"), "base_url": cty.StringVal("https://gateway.example")}},
		{Name: "relative base_url", Attrs: map[string]cty.Value{"base_url": cty.StringVal("gateway.example")}, Want: []string{"base_url"}},
		{Name: "bad env and binary", Attrs: map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"BAD-KEY": cty.StringVal("")}), "binary": cty.StringVal("")}, Want: []string{"binary", "env"}},
	})
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	d := agentcheck.Describe(t, New(), map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"FOO": cty.StringVal("bar")})})
	want := sdk.AgentDescription{
		RequiredEnv:     [][]string{{"GEMINI_API_KEY"}},
		Env:             map[string]string{"FOO": "bar"},
		Sessions:        &sdk.SessionStorage{PathPattern: "{home}/.gemini/tmp/{cwd_encoded}/chats/session-*-{session_id:8}.jsonl"},
		CaptureSessions: true,
		Resume:          true,
		Fork:            true,

		BypassesPermissions: true,
		Endpoints:           []string{"generativelanguage.googleapis.com"},
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("Describe = %+v, want %+v", d, want)
	}
	d = agentcheck.Describe(t, New(), map[string]cty.Value{"base_url": cty.StringVal("http://127.0.0.1:8089")})
	if want := []string{"127.0.0.1:8089"}; !reflect.DeepEqual(d.Endpoints, want) {
		t.Errorf("with base_url: endpoints %v, want %v", d.Endpoints, want)
	}
	for _, k := range ownAuth {
		d = agentcheck.Describe(t, New(), map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{k: cty.StringVal("true")})})
		if d.RequiredEnv != nil {
			t.Errorf("%s=true still requires %v", k, d.RequiredEnv)
		}
	}
}

// TestEncodeCwd: the project directory names the Gemini CLI 0.61 gives
// these cwds (its ProjectRegistry.slugify of the base name, run in node).
func TestEncodeCwd(t *testing.T) {
	t.Parallel()
	for cwd, want := range map[string]string{
		"/home/agent/workspace":       "workspace",
		"/tmp/work dir/my repo_v1.2":  "my-repo-v1-2",
		"/src/--Weird__Name--":        "weird-name",
		"/":                           "project",
		"/srv/ünïcode":                "n-code",
		"/home/me/sanddune.worktrees": "sanddune-worktrees",
	} {
		if got, err := (provider{}).EncodeCwd(context.Background(), cwd); err != nil || got != want {
			t.Errorf("EncodeCwd(%q) = %q, %v; want %q", cwd, got, err, want)
		}
	}
}
