package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/agentcheck"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit/agentkittest"
	"github.com/missingstudio/sanddune/sdk/agenttest"
)

func TestBuildCommandGolden(t *testing.T) {
	t.Parallel()
	model := map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6")}
	full := map[string]cty.Value{"model": cty.StringVal("opencode/big-pickle"), "variant": cty.StringVal("high"), "agent": cty.StringVal("build")}
	agentkittest.CheckCommands(t, New(), "testdata/commands.golden", []agentkittest.CommandCase{
		{Name: "print", Attrs: model, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "print base_url", Attrs: map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6"), "base_url": cty.StringVal("http://127.0.0.1:8080/gateway")}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, SkipPermissions: true}},
		{Name: "interactive base_url", Attrs: map[string]cty.Value{"model": cty.StringVal("openai/gpt-5.4"), "base_url": cty.StringVal("http://127.0.0.1:8080/gateway")}, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive}},
		{Name: "print variant and agent in sandbox", Attrs: full, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, SkipPermissions: true, RunsAsRoot: true}},
		{Name: "print custom binary", Attrs: map[string]cty.Value{"model": cty.StringVal("openai/gpt-5.4"), "binary": cty.StringVal("/opt/opencode")}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 3}},
		{Name: "interactive without sandbox", Attrs: full, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive}},
		{Name: "interactive in sandbox", Attrs: model, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, SkipPermissions: true}},
		{Name: "interactive prompt starting with a dash", Attrs: model, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "--help me"}},
		{Name: "interactive no prompt", Attrs: model, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "-"}},
	})
}

func TestBuildCommandRejectsResume(t *testing.T) {
	t.Parallel()
	model := map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6")}
	cfg := agentkittest.Config(t, New(), model)
	for _, req := range []sdk.CommandRequest{
		{Config: cfg, Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: "ses_1"},
		{Config: cfg, Mode: sdk.ModeInteractive, ResumeSessionID: "ses_1", ForkSession: true},
	} {
		if _, err := New().BuildCommand(context.Background(), req); !errors.Is(err, ErrNoResume) {
			t.Errorf("err = %v, want ErrNoResume", err)
		}
	}
}

func TestConfigure(t *testing.T) {
	t.Parallel()
	agentcheck.Configure(t, New(), []agentcheck.Case{
		{Name: "provider/model", Attrs: map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6")}},
		{Name: "base_url", Attrs: map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6"), "base_url": cty.StringVal("http://127.0.0.1:8080/gateway")}},
		{Name: "base_url without host", Attrs: map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6"), "base_url": cty.StringVal("http:///v1")}, Want: []string{"base_url"}},
		{Name: "bare model", Attrs: map[string]cty.Value{"model": cty.StringVal("claude-sonnet-4-6")}, Want: []string{"model"}},
		{Name: "empty variant", Attrs: map[string]cty.Value{"model": cty.StringVal("a/b"), "variant": cty.StringVal("")}, Want: []string{"variant"}},
		{Name: "bad env", Attrs: map[string]cty.Value{"model": cty.StringVal("a/b"), "env": cty.MapVal(map[string]cty.Value{"A B": cty.StringVal("")})}, Want: []string{"env"}},
	})
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	for model, want := range map[string][][]string{
		"anthropic/claude-sonnet-4-6": {{"ANTHROPIC_API_KEY"}},
		"openai/gpt-5.4":              {{"OPENAI_API_KEY"}},
		"opencode/big-pickle":         nil, // free models need no key
		"my-proxy/some-model":         nil,
	} {
		d := agentcheck.Describe(t, New(), map[string]cty.Value{"model": cty.StringVal(model)})
		if !reflect.DeepEqual(d.RequiredEnv, want) {
			t.Errorf("%s: RequiredEnv = %v, want %v", model, d.RequiredEnv, want)
		}
		if d.Sessions != nil || d.Resume || d.Fork {
			t.Errorf("%s: opencode must not claim sessions: %+v", model, d)
		}
		if !d.BypassesPermissions {
			t.Errorf("%s: opencode runs with its permissions bypassed: it needs a boundary", model)
		}
	}
}

func TestRewriteSessionIsIdentity(t *testing.T) {
	t.Parallel()
	in := []byte(`{"cwd":"/home/agent/workspace"}`)
	if got := agentkittest.Rewrite(t, New(), in, "/home/agent/workspace", "/x"); string(got) != string(in) {
		t.Errorf("got %s", got)
	}
}

const fixtureFinal = "Fixed the sign error in `src/sum.ts`; the failing test now passes.\n\n<promise>COMPLETE</promise>"

func parseCases(t *testing.T) []agenttest.Case {
	huge := strings.Repeat("z", 3<<20)
	return []agenttest.Case{
		{
			Name:  "fixture",
			Lines: agenttest.ReadLines(t, "testdata/opencode-stream.jsonl"),
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: "ses_1a2b3c4d5ffeQw8Rt6Yu4Io2Pa"},
				{Type: sdk.EventText, Text: "I'll run the test suite first to see what is failing."},
				{Type: sdk.EventToolCall, ToolName: "bash", ToolArg: "npm test"},
				{Type: sdk.EventToolCall, ToolName: "edit", ToolArg: "/home/agent/workspace/src/sum.ts"},
				{Type: sdk.EventText, Text: fixtureFinal},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 15480 + 640 + 402, CacheReadInputTokens: 15488 + 16120, OutputTokens: 96 + 131 + 58}},
				{Type: sdk.EventResult, Text: fixtureFinal},
			},
		},
		{
			Name: "errors",
			Lines: []string{
				`{"type":"error","timestamp":1782900002000,"sessionID":"ses_2","error":{"name":"APIError","data":{"message":"Rate limit exceeded","statusCode":429,"isRetryable":true}}}`,
				`{"type":"error","sessionID":"ses_2","error":{"name":"ProviderAuthError","data":{"providerID":"anthropic","message":"missing API key"}}}`,
				`{"type":"error","sessionID":"ses_2","error":{"name":"MessageAbortedError","data":{}}}`,
				`{"type":"error","sessionID":"ses_2"}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: "ses_2"},
				{Type: sdk.EventError, Text: "Rate limit exceeded"},
				{Type: sdk.EventError, Text: "missing API key"},
				{Type: sdk.EventError, Text: "opencode: MessageAbortedError"},
				{Type: sdk.EventError, Text: "opencode: error"},
			},
		},
		{
			Name: "completion signal split across text parts; other tools",
			Lines: []string{
				`{"type":"text","part":{"type":"text","text":"<promise>COMP"}}`,
				`{"type":"tool_use","part":{"type":"tool","tool":"webfetch","state":{"status":"completed","input":{"url":"https://go.dev"}}}}`,
				`{"type":"tool_use","part":{"type":"tool","tool":"task","state":{"status":"error","input":{"description":"Explore repo","prompt":"..."},"error":"boom"}}}`,
				`{"type":"tool_use","part":{"type":"tool","tool":"todowrite","state":{"status":"completed","input":{"todos":[]}}}}`,
				`{"type":"text","part":{"type":"text","text":"LETE</promise>"}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventText, Text: "<promise>COMP"},
				{Type: sdk.EventToolCall, ToolName: "webfetch", ToolArg: "https://go.dev"},
				{Type: sdk.EventToolCall, ToolName: "task", ToolArg: "Explore repo"},
				{Type: sdk.EventToolCall, ToolName: "todowrite"},
				{Type: sdk.EventText, Text: "LETE</promise>"},
				{Type: sdk.EventResult, Text: "LETE</promise>"},
			},
		},
		{
			Name: "malformed, non-JSON and huge lines",
			Lines: []string{
				`INFO  2026-07-01 service=server starting`,
				`{"type":"text","part":{"type":"text","text":"torn`,
				`{"type":"text","part":"nope"}`,
				`{"type":"tool_use","part":{"tool":"read","state":{"status":"completed","input":{"filePath":"/w/a.go"},"metadata":"odd"},"time":7}}`,
				`{"type":"step_finish","part":{"tokens":"not tokens"}}`,
				`{"type":"error","error":{"name":7,"data":{"message":"bad gateway"}}}`,
				`{"type":"text","part":{"type":"text","text":"` + huge + `"}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventText, Text: `INFO  2026-07-01 service=server starting`},
				{Type: sdk.EventText, Text: `{"type":"text","part":{"type":"text","text":"torn`},
				{Type: sdk.EventToolCall, ToolName: "read", ToolArg: "/w/a.go"},
				{Type: sdk.EventError, Text: "bad gateway"},
				{Type: sdk.EventText, Text: huge},
				{Type: sdk.EventResult, Text: huge},
			},
		},
	}
}

func TestReplay(t *testing.T) {
	t.Parallel()
	agenttest.Replay(t, New(), cty.ObjectVal(map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6")}), parseCases(t)...)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	agenttest.Run(t, New(), cty.ObjectVal(map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6")}))
}

// TestNoPluginInstallPrelude runs a command's prelude: in a fresh home it
// marks opencode's config dir as holding @opencode-ai/plugin, which stops
// opencode's npm install there; a config dir of its own is left alone.
func TestNoPluginInstallPrelude(t *testing.T) {
	cfg := agentkittest.Config(t, New(), map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6"), "binary": cty.StringVal("echo")})
	cmd, err := New().BuildCommand(context.Background(), sdk.CommandRequest{Config: cfg, Mode: sdk.ModePrint, Iteration: 1})
	if err != nil {
		t.Fatal(err)
	}
	run := func(home string) {
		c := exec.Command(cmd.Argv[0], cmd.Argv[1:]...)
		c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
		out, err := c.CombinedOutput()
		if err != nil || string(out) != "run --format json --model anthropic/claude-sonnet-4-6\n" {
			t.Fatalf("%v: %q", err, out)
		}
	}
	fresh := t.TempDir()
	run(fresh)
	dir := filepath.Join(fresh, ".config", "opencode")
	var lock struct {
		Packages map[string]struct{ Dependencies map[string]string }
	}
	b, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil || json.Unmarshal(b, &lock) != nil || lock.Packages[""].Dependencies["@opencode-ai/plugin"] == "" {
		t.Fatalf("package-lock.json %q (%v) should list @opencode-ai/plugin", b, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil || !fi.IsDir() {
		t.Fatalf("node_modules: %v", err)
	}

	own := t.TempDir()
	dir = filepath.Join(own, ".config", "opencode")
	if err := os.MkdirAll(dir, 0o755); err != nil || os.WriteFile(filepath.Join(dir, "package-lock.json"), []byte(`{"mine":true}`), 0o644) != nil {
		t.Fatal(err)
	}
	run(own)
	if b, _ := os.ReadFile(filepath.Join(dir, "package-lock.json")); string(b) != `{"mine":true}` {
		t.Fatalf("an existing package-lock.json was changed: %s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err == nil {
		t.Fatal("node_modules created beside an existing package-lock.json")
	}
}
