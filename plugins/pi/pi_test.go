package pi

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agenttest"
	"github.com/zclconf/go-cty/cty"
)

const session = "019e8c52-3b4c-7e25-8d66-7a1f3c9b5e28"

func TestBuildCommandGolden(t *testing.T) {
	model := map[string]cty.Value{"model": cty.StringVal("claude-sonnet-4-6")}
	full := map[string]cty.Value{"model": cty.StringVal("anthropic/claude-opus-4-7"), "thinking": cty.StringVal("xhigh")}
	cases := []cmdCase{
		{"print", model, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{"print thinking, sandbox is irrelevant", full, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, SkipPermissions: true, RunsAsRoot: true}},
		{"print resume", full, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session}},
		{"print resume on iteration 2 is ignored", model, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 2, ResumeSessionID: session}},
		{"print fork", model, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: session, ForkSession: true}},
		{"print custom binary", map[string]cty.Value{"model": cty.StringVal("openai/gpt-5.4"), "binary": cty.StringVal("/opt/pi/bin/pi")}, sdk.CommandRequest{Mode: sdk.ModePrint, Iteration: 1}},
		{"interactive", full, sdk.CommandRequest{Mode: sdk.ModeInteractive}},
		{"interactive resume", model, sdk.CommandRequest{Mode: sdk.ModeInteractive, ResumeSessionID: session}},
		{"interactive prompt starting with a dash", model, sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "--help me"}},
		{"interactive no prompt", model, sdk.CommandRequest{Mode: sdk.ModeInteractive, Prompt: "-"}},
	}
	checkGolden(t, "testdata/commands.golden", buildAll(t, cases))
}

func TestBuildCommandErrors(t *testing.T) {
	cfg := testConfig(t, map[string]cty.Value{"model": cty.StringVal("m")})
	for name, req := range map[string]sdk.CommandRequest{
		"fork without session": {Config: cfg, Mode: sdk.ModePrint, Iteration: 1, ForkSession: true},
		"path-like session id": {Config: cfg, Mode: sdk.ModePrint, Iteration: 1, ResumeSessionID: "../../x.jsonl"},
		"unknown mode":         {Config: cfg, Mode: "batch"},
	} {
		if _, err := New().BuildCommand(context.Background(), req); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestConfigure(t *testing.T) {
	checkConfigure(t, []configureCase{
		{"model", map[string]cty.Value{"model": cty.StringVal("claude-sonnet-4-6")}, nil},
		{"thinking", map[string]cty.Value{"model": cty.StringVal("m"), "thinking": cty.StringVal("minimal")}, nil},
		{"bad thinking", map[string]cty.Value{"model": cty.StringVal("m"), "thinking": cty.StringVal("max")}, []string{"thinking"}},
		{"empty model", map[string]cty.Value{"model": cty.StringVal("")}, []string{"model"}},
	})
}

func TestDescribe(t *testing.T) {
	d, err := New().Describe(context.Background(), testConfig(t, map[string]cty.Value{"model": cty.StringVal("anthropic/claude-sonnet-4-6")}))
	if err != nil {
		t.Fatal(err)
	}
	want := sdk.AgentDescription{
		RequiredEnv: [][]string{{"ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"}},
		Sessions:    &sdk.SessionStorage{PathPattern: "{home}/.pi/agent/sessions/{cwd_encoded}/*_{session_id}.jsonl", EncodeCwd: "pi"},
		Resume:      true,
		Fork:        true,
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("Describe = %+v, want %+v", d, want)
	}
	d, _ = New().Describe(context.Background(), testConfig(t, map[string]cty.Value{"model": cty.StringVal("claude-sonnet-4-6")}))
	if len(d.RequiredEnv) != 1 || !strings.Contains(strings.Join(d.RequiredEnv[0], " "), "ANTHROPIC_API_KEY") || !strings.Contains(strings.Join(d.RequiredEnv[0], " "), "OPENROUTER_API_KEY") {
		t.Errorf("bare model: RequiredEnv = %v, want any known key", d.RequiredEnv)
	}
	d, _ = New().Describe(context.Background(), testConfig(t, map[string]cty.Value{"model": cty.StringVal("my-local/llama")}))
	if d.RequiredEnv != nil {
		t.Errorf("unknown provider: RequiredEnv = %v", d.RequiredEnv)
	}
}

func TestRewriteSession(t *testing.T) {
	in := strings.Join([]string{
		`{"type":"session","version":3,"id":"` + session + `","timestamp":"2026-07-01T10:20:00.000Z","cwd":"/home/agent/workspace"}`,
		`{"type":"model_change","id":"a1b2c3d4","parentId":null,"timestamp":"2026-07-01T10:20:00.001Z","provider":"anthropic","modelId":"claude-sonnet-4-6"}`,
		`{"type":"message","id":"b2c3d4e5","parentId":"a1b2c3d4","message":{"role":"user","content":[{"type":"text","text":"work in /home/agent/workspace"}]}}`,
	}, "\n") + "\n"
	got, err := New().RewriteSession(context.Background(), sdk.RewriteSessionRequest{Data: []byte(in), FromCwd: "/home/agent/workspace", ToCwd: "/Users/me/code/my repo_v1.2"})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(in, `"cwd":"/home/agent/workspace"`, `"cwd":"/Users/me/code/my repo_v1.2"`, 1)
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

const fixtureFinal = "Fixed the sign error in `src/sum.ts`; the test passes now.\n\n<promise>COMPLETE</promise>"

func parseCases(t *testing.T) []parseCase {
	huge := strings.Repeat("w", 3<<20)
	return []parseCase{
		{
			name:  "fixture",
			lines: agenttest.ReadLines(t, "testdata/pi-stream.jsonl"),
			want: []sdk.Event{
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
			name: "model error with exit 0",
			lines: []string{
				`{"type":"session","version":3,"id":"s1","timestamp":"2026-07-01T10:20:00.000Z","cwd":"/home/agent/workspace"}`,
				`{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"overloaded"}`,
				`{"type":"auto_retry_end","success":false,"attempt":3,"finalError":"401 invalid x-api-key"}`,
				`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":""}],"usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0},"stopReason":"error","errorMessage":"401 invalid x-api-key"}}`,
				`{"type":"turn_end","message":{"role":"assistant","content":[{"type":"text","text":""}],"stopReason":"error","errorMessage":"401 invalid x-api-key"},"toolResults":[]}`,
				`{"type":"agent_end","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":[{"type":"text","text":""}],"stopReason":"error","errorMessage":"401 invalid x-api-key"}]}`,
			},
			want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: "s1"},
				{Type: sdk.EventError, Text: "401 invalid x-api-key"},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{}},
			},
		},
		{
			name: "aborted, other tools, stream cut before agent_end",
			lines: []string{
				`{"type":"tool_execution_start","toolCallId":"t1","toolName":"read","args":{"path":"README.md"}}`,
				`{"type":"tool_execution_start","toolCallId":"t2","toolName":"grep","args":{"pattern":"TODO","path":"src"}}`,
				`{"type":"tool_execution_start","toolCallId":"t3","toolName":"ls","args":{}}`,
				`{"type":"message_update","assistantMessageEvent":{"type":"thinking_delta","delta":"hmm <promise>COMPLETE</promise>"}}`,
				`{"type":"message_update","assistantMessageEvent":{"type":"toolcall_delta","delta":"{\"pa"}}`,
				`{"type":"message_end","message":{"role":"toolResult","content":[{"type":"text","text":"x"}]}}`,
				`{"type":"message_end","message":{"role":"assistant","content":[],"usage":{"input":5,"output":1,"cacheRead":2,"cacheWrite":3},"stopReason":"aborted"}}`,
			},
			want: []sdk.Event{
				{Type: sdk.EventToolCall, ToolName: "read", ToolArg: "README.md"},
				{Type: sdk.EventToolCall, ToolName: "grep", ToolArg: "TODO"},
				{Type: sdk.EventToolCall, ToolName: "ls"},
				{Type: sdk.EventError, Text: "pi: assistant message aborted"},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 5, CacheCreationInputTokens: 3, CacheReadInputTokens: 2, OutputTokens: 1}},
			},
		},
		{
			name: "malformed, non-JSON and huge lines",
			lines: []string{
				`Session found in different project: /elsewhere`,
				`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"torn`,
				`{"type":"message_update","assistantMessageEvent":[]}`,
				`{"type":"tool_execution_start","toolName":"write","args":{"path":"notes.md","content":7}}`,
				`{"type":"message_end","message":{"role":"assistant","content":"odd","usage":"odd","stopReason":"error","errorMessage":"overloaded"}}`,
				`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"usage":{"input":1},"stopReason":"stop"}}`,
				`{"type":"agent_end","messages":[7,{"role":"assistant","content":[5,{"type":"text","text":"ok"}],"stopReason":"stop"}]}`,
				`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"` + huge + `"}}`,
			},
			want: []sdk.Event{
				{Type: sdk.EventText, Text: `Session found in different project: /elsewhere`},
				{Type: sdk.EventText, Text: `{"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":"torn`},
				{Type: sdk.EventToolCall, ToolName: "write", ToolArg: "notes.md"},
				{Type: sdk.EventError, Text: "overloaded"},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 1}},
				{Type: sdk.EventResult, Text: "ok"},
				{Type: sdk.EventText, Text: huge},
			},
		},
	}
}

func TestReplay(t *testing.T) {
	replay(t, cty.ObjectVal(map[string]cty.Value{"model": cty.StringVal("claude-sonnet-4-6")}), parseCases(t))
}

func TestConformance(t *testing.T) {
	agenttest.Run(t, New(), cty.ObjectVal(map[string]cty.Value{"model": cty.StringVal("claude-sonnet-4-6")}))
}
