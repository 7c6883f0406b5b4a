package cursor

import (
	"reflect"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/agentcheck"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit/agentkittest"
)

func TestBuildCommandGolden(t *testing.T) {
	t.Parallel()
	agentkittest.CheckCommands(t, New(), "testdata/commands.golden", []agentkittest.CommandCase{
		{Name: "print default model", Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "print model in sandbox", Attrs: map[string]cty.Value{"model": cty.StringVal("sonnet-4.5")}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 2, SkipPermissions: true, RunsAsRoot: true}},
		{Name: "print base_url", Attrs: map[string]cty.Value{"base_url": cty.StringVal("https://cursor-proxy.example")}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "print custom binary and env", Attrs: map[string]cty.Value{"binary": cty.StringVal("agent"), "env": cty.MapVal(map[string]cty.Value{"CURSOR_CONFIG_DIR": cty.StringVal("/cfg")})}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "interactive in sandbox", Attrs: map[string]cty.Value{"model": cty.StringVal("auto")}, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, SkipPermissions: true}},
		{Name: "interactive flag-like prompt", Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "--help me"}},
		{Name: "interactive no prompt", Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "-"}},
	})
}

func TestBuildCommandErrors(t *testing.T) {
	t.Parallel()
	// Describe says no resume: a request to resume is refused, not ignored.
	cfg := agentkittest.Config(t, New(), nil)
	_, err := New().BuildCommand(t.Context(), sdk.CommandRequest{Config: cfg, Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: "c6b62c6f-7ead-4fd6-9922-e952131177ff"})
	if err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("resume: %v", err)
	}
}

func TestConfigure(t *testing.T) {
	t.Parallel()
	agentcheck.Configure(t, New(), []agentcheck.Case{
		{Name: "defaults"},
		{Name: "base_url", Attrs: map[string]cty.Value{"base_url": cty.StringVal("https://cursor-proxy.example")}},
		{Name: "relative base_url", Attrs: map[string]cty.Value{"base_url": cty.StringVal("cursor-proxy.example")}, Want: []string{"base_url"}},
		{Name: "bad env and binary", Attrs: map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"BAD-KEY": cty.StringVal("")}), "binary": cty.StringVal("")}, Want: []string{"binary", "env"}},
	})
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	d := agentcheck.Describe(t, New(), map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"FOO": cty.StringVal("bar")})})
	want := sdk.AgentDescription{
		RequiredEnv:         [][]string{{"CURSOR_API_KEY"}},
		Env:                 map[string]string{"FOO": "bar"},
		BypassesPermissions: true,
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("Describe = %+v, want %+v", d, want)
	}
	d = agentcheck.Describe(t, New(), map[string]cty.Value{"base_url": cty.StringVal("https://cursor-proxy.internal")})
	if want := []string{"cursor-proxy.internal:443"}; !reflect.DeepEqual(d.Endpoints, want) {
		t.Errorf("with base_url: endpoints %v, want %v", d.Endpoints, want)
	}
}
