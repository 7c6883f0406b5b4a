package pi

import (
	"context"
	"encoding/json"
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

const session = "019e8c52-3b4c-7e25-8d66-7a1f3c9b5e28"

func TestBuildCommandGolden(t *testing.T) {
	t.Parallel()
	model := map[string]cty.Value{"model": cty.StringVal("claude-sonnet-4-6")}
	full := map[string]cty.Value{"model": cty.StringVal("anthropic/claude-opus-4-7"), "thinking": cty.StringVal("xhigh")}
	agentkittest.CheckCommands(t, New(), "testdata/commands.golden", []agentkittest.CommandCase{
		{Name: "print", Attrs: model, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "print base_url", Attrs: map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6"), "base_url": cty.StringVal("http://127.0.0.1:8080/gateway")}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "interactive base_url", Attrs: map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6"), "base_url": cty.StringVal("http://127.0.0.1:8080/gateway")}, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "hi"}},
		{Name: "print thinking, sandbox is irrelevant", Attrs: full, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, SkipPermissions: true, RunsAsRoot: true}},
		{Name: "print resume", Attrs: full, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session}},
		{Name: "print resume on iteration 2 is ignored", Attrs: model, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 2, ResumeSessionID: session}},
		{Name: "print fork", Attrs: model, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, ForkSession: true}},
		{Name: "print custom binary", Attrs: map[string]cty.Value{"model": cty.StringVal("openai/gpt-5.4"), "binary": cty.StringVal("/opt/pi/bin/pi")}, Req: sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{Name: "interactive", Attrs: full, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive}},
		{Name: "interactive resume", Attrs: model, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, ResumeSessionID: session}},
		{Name: "interactive prompt starting with a dash", Attrs: model, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "--help me"}},
		{Name: "interactive no prompt", Attrs: model, Req: sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "-"}},
	})
}

func TestBuildCommandErrors(t *testing.T) {
	t.Parallel()
}

func TestConfigure(t *testing.T) {
	t.Parallel()
	agentcheck.Configure(t, New(), []agentcheck.Case{
		{Name: "model", Attrs: map[string]cty.Value{"model": cty.StringVal("claude-sonnet-4-6")}},
		{Name: "base_url", Attrs: map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6"), "base_url": cty.StringVal("http://127.0.0.1:8080/gateway")}},
		{Name: "base_url without provider", Attrs: map[string]cty.Value{"model": cty.StringVal("claude-sonnet-4-6"), "base_url": cty.StringVal("http://127.0.0.1:8080/gateway")}, Want: []string{"base_url"}},
		{Name: "bad base_url", Attrs: map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6"), "base_url": cty.StringVal("https://u:p@gw.example")}, Want: []string{"base_url"}},
		{Name: "thinking", Attrs: map[string]cty.Value{"model": cty.StringVal("m"), "thinking": cty.StringVal("minimal")}},
		{Name: "bad thinking", Attrs: map[string]cty.Value{"model": cty.StringVal("m"), "thinking": cty.StringVal("max")}, Want: []string{"thinking"}},
		{Name: "empty model", Attrs: map[string]cty.Value{"model": cty.StringVal("")}, Want: []string{"model"}},
	})
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	d := agentcheck.Describe(t, New(), map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6")})
	want := sdk.AgentDescription{
		RequiredEnv:     [][]string{{"ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"}},
		Sessions:        &sdk.SessionStorage{PathPattern: "{home}/.pi/agent/sessions/{cwd_encoded}/*_{session_id}.jsonl"},
		CaptureSessions: true,
		Resume:          true,
		Fork:            true,

		BypassesPermissions: true,
		Endpoints:           []string{"api.anthropic.com"},
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("Describe = %+v, want %+v", d, want)
	}
	d = agentcheck.Describe(t, New(), map[string]cty.Value{"model": cty.StringVal("claude-sonnet-4-6")})
	if len(d.RequiredEnv) != 1 || !strings.Contains(strings.Join(d.RequiredEnv[0], " "), "ANTHROPIC_API_KEY") || !strings.Contains(strings.Join(d.RequiredEnv[0], " "), "OPENROUTER_API_KEY") {
		t.Errorf("bare model: RequiredEnv = %v, want any known key", d.RequiredEnv)
	}
	d = agentcheck.Describe(t, New(), map[string]cty.Value{"model": cty.StringVal("my-local/llama")})
	if d.RequiredEnv != nil {
		t.Errorf("unknown provider: RequiredEnv = %v", d.RequiredEnv)
	}
}

func TestRewriteSession(t *testing.T) {
	t.Parallel()
	in := strings.Join([]string{
		`{"type":"session","version":3,"id":"` + session + `","timestamp":"2026-07-01T10:20:00.000Z","cwd":"/home/agent/workspace"}`,
		`{"type":"model_change","id":"a1b2c3d4","parentId":null,"timestamp":"2026-07-01T10:20:00.001Z","provider":"anthropic","modelId":"claude-sonnet-4-6"}`,
		`{"type":"message","id":"b2c3d4e5","parentId":"a1b2c3d4","message":{"role":"user","content":[{"type":"text","text":"work in /home/agent/workspace"}]}}`,
	}, "\n") + "\n"
	got := agentkittest.Rewrite(t, New(), []byte(in), "/home/agent/workspace", "/Users/me/code/my repo_v1.2")
	want := strings.Replace(in, `"cwd":"/home/agent/workspace"`, `"cwd":"/Users/me/code/my repo_v1.2"`, 1)
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

const fixtureFinal = "Fixed the sign error in `src/sum.ts`; the test passes now.\n\n<promise>COMPLETE</promise>"

func parseCases(t *testing.T) []agenttest.Case {
	huge := strings.Repeat("w", 3<<20)
	return []agenttest.Case{
		{
			Name:  "fixture",
			Lines: agenttest.ReadLines(t, "testdata/pi-stream.jsonl"),
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: session},
				{Type: sdk.EventText, Text: "I'll run the tests first."},
				{Type: sdk.EventToolCall, ToolName: "bash", ToolArg: "npm test"},
				{Type: sdk.EventToolCall, ToolName: "edit", ToolArg: "src/sum.ts"},
				{Type: sdk.EventText, Text: "Fixed the sign error in `src/sum.ts`; the test passes now.\n\n"},
				{Type: sdk.EventText, Text: "<promise>COMP"},
				{Type: sdk.EventText, Text: "LETE</promise>"},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 1850 + 210 + 160, CacheCreationInputTokens: 1800, CacheReadInputTokens: 3650 + 3930, OutputTokens: 64 + 88 + 31}},
				{Type: sdk.EventResult, Text: fixtureFinal},
			},
		},
		{
			// pi 0.73.1 --mode json exits 0 when the model call fails: the
			// failed message is the iteration's error.
			Name: "model error with exit 0",
			Lines: []string{
				`{"type":"session","version":3,"id":"s1","timestamp":"2026-07-01T10:20:00.000Z","cwd":"/home/agent/workspace"}`,
				`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":""}],"usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0},"stopReason":"error","errorMessage":"401 invalid x-api-key"}}`,
				`{"type":"turn_end","message":{"role":"assistant","content":[{"type":"text","text":""}],"stopReason":"error","errorMessage":"401 invalid x-api-key"},"toolResults":[]}`,
				`{"type":"agent_end","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":[{"type":"text","text":""}],"stopReason":"error","errorMessage":"401 invalid x-api-key"}]}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: "s1"},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{}},
				{Type: sdk.EventError, Text: "401 invalid x-api-key"},
			},
		},
		{
			// pi retries a retryable failure after agent_end: a retry that
			// succeeds leaves a warning, one that gives up is the error.
			Name: "retried model errors",
			Lines: []string{
				`{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"529 overloaded_error"}}`,
				`{"type":"agent_end","messages":[{"role":"assistant","content":[],"stopReason":"error","errorMessage":"529 overloaded_error"}]}`,
				`{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"529 overloaded_error"}`,
				`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"stopReason":"stop"}}`,
				`{"type":"auto_retry_end","success":true,"attempt":1}`,
				`{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"503 service unavailable"}}`,
				`{"type":"agent_end","messages":[{"role":"assistant","content":[],"stopReason":"error","errorMessage":"503 service unavailable"}]}`,
				`{"type":"auto_retry_end","success":false,"attempt":3,"finalError":"503 service unavailable"}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventWarning, Text: "retrying (attempt 1 of 3) after: 529 overloaded_error"},
				{Type: sdk.EventError, Text: "503 service unavailable"},
			},
		},
		{
			Name: "aborted, other tools, stream cut before agent_end",
			Lines: []string{
				`{"type":"tool_execution_start","toolCallId":"t1","toolName":"read","args":{"path":"README.md"}}`,
				`{"type":"tool_execution_start","toolCallId":"t2","toolName":"grep","args":{"pattern":"TODO","path":"src"}}`,
				`{"type":"tool_execution_start","toolCallId":"t3","toolName":"ls","args":{}}`,
				`{"type":"message_update","assistantMessageEvent":{"type":"thinking_delta","delta":"hmm <promise>COMPLETE</promise>"}}`,
				`{"type":"message_update","assistantMessageEvent":{"type":"toolcall_delta","delta":"{\"pa"}}`,
				`{"type":"message_end","message":{"role":"toolResult","content":[{"type":"text","text":"x"}]}}`,
				`{"type":"message_end","message":{"role":"assistant","content":[],"usage":{"input":5,"output":1,"cacheRead":2,"cacheWrite":3},"stopReason":"aborted"}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventToolCall, ToolName: "read", ToolArg: "README.md"},
				{Type: sdk.EventToolCall, ToolName: "grep", ToolArg: "TODO"},
				{Type: sdk.EventToolCall, ToolName: "ls"},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 5, CacheCreationInputTokens: 3, CacheReadInputTokens: 2, OutputTokens: 1}},
				{Type: sdk.EventError, Text: "pi: assistant message aborted"},
			},
		},
		{
			Name: "malformed, non-JSON and huge lines",
			Lines: []string{
				`Session found in different project: /elsewhere`,
				`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"torn`,
				`{"type":"message_update","assistantMessageEvent":[]}`,
				`{"type":"tool_execution_start","toolName":"write","args":{"path":"notes.md","content":7}}`,
				`{"type":"message_end","message":{"role":"assistant","content":"odd","usage":"odd","stopReason":"error","errorMessage":"overloaded"}}`,
				`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input":1},"stopReason":"stop"}}`,
				`{"type":"agent_end","messages":[7,{"role":"assistant","content":[5,{"type":"text","text":"ok"}],"stopReason":"stop"}]}`,
				`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"` + huge + `"}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventText, Text: `Session found in different project: /elsewhere`},
				{Type: sdk.EventText, Text: `{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"torn`},
				{Type: sdk.EventToolCall, ToolName: "write", ToolArg: "notes.md"},
				// A failure a good message follows was recovered from.
				{Type: sdk.EventWarning, Text: "overloaded"},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 1}},
				{Type: sdk.EventResult, Text: "ok"},
				{Type: sdk.EventText, Text: huge},
			},
		},
	}
}

func TestReplay(t *testing.T) {
	t.Parallel()
	agenttest.Replay(t, New(), cty.ObjectVal(map[string]cty.Value{"model": cty.StringVal("claude-sonnet-4-6")}), parseCases(t)...)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	agenttest.Run(t, New(), cty.ObjectVal(map[string]cty.Value{"model": cty.StringVal("claude-sonnet-4-6")}))
}

// TestBaseURLPrelude runs a base_url command's prelude: it sets the
// provider's baseUrl in models.json, keeps the rest of the file, then runs
// the CLI (echo here) with its arguments.
func TestBaseURLPrelude(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("needs node, which pi runs on")
	}
	home := t.TempDir()
	dir := filepath.Join(home, ".pi", "agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const existing = `{"providers":{"anthropic":{"headers":{"x-team":"a"}},"ollama":{"baseUrl":"http://localhost:11434/v1","api":"openai-completions","models":[{"id":"llama3.1:8b"}]}}}`
	if err := os.WriteFile(filepath.Join(dir, "models.json"), []byte(existing), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := agentkittest.Config(t, New(), map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6"), "base_url": cty.StringVal("http://127.0.0.1:8080/gw"), "binary": cty.StringVal("echo")})
	cmd, err := New().BuildCommand(context.Background(), sdk.CommandRequest{Config: cfg, Mode: sdk.ModePrint, Iteration: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(cmd.Argv[0], cmd.Argv[1:]...)
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := "--mode json --model anthropic/claude-sonnet-4-6\n"; string(out) != want {
		t.Errorf("output %q, want %q", out, want)
	}
	var got, want any
	b, _ := os.ReadFile(filepath.Join(dir, "models.json"))
	_ = json.Unmarshal(b, &got)
	_ = json.Unmarshal([]byte(`{"providers":{"anthropic":{"headers":{"x-team":"a"},"baseUrl":"http://127.0.0.1:8080/gw"},"ollama":{"baseUrl":"http://localhost:11434/v1","api":"openai-completions","models":[{"id":"llama3.1:8b"}]}}}`), &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("models.json %s", b)
	}
}
