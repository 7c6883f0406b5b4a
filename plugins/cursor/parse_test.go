package cursor

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agenttest"
)

const (
	fixtureSession = "c6b62c6f-7ead-4fd6-9922-e952131177ff"
	fixtureFinal   = "Fixed the sign error in `src/sum.ts`; the test passes.\n\n<promise>COMPLETE</promise>"
)

func parseCases(t *testing.T) []agenttest.Case {
	huge := strings.Repeat("x", 3<<20)
	return []agenttest.Case{
		{
			// Cursor's documented stream-json events (system init, user,
			// assistant, typed and generic tool calls, result).
			Name:  "documented format",
			Lines: agenttest.ReadLines(t, "testdata/cursor-stream.jsonl"),
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: fixtureSession},
				{Type: sdk.EventText, Text: "I'll run the test suite first."},
				{Type: sdk.EventToolCall, ToolName: "Shell", ToolArg: "npm test"},
				{Type: sdk.EventToolCall, ToolName: "Read", ToolArg: "src/sum.ts"},
				{Type: sdk.EventToolCall, ToolName: "Write", ToolArg: "src/sum.ts"},
				{Type: sdk.EventToolCall, ToolName: "grep", ToolArg: "sum("},
				{Type: sdk.EventText, Text: fixtureFinal},
				{Type: sdk.EventResult, Text: "I'll run the test suite first." + fixtureFinal},
			},
		},
		{
			// A failed result fails the iteration, whatever the exit code;
			// a usage object on the result is read when there is one.
			Name: "error results and usage",
			Lines: []string{
				`{"type":"result","subtype":"error","is_error":true,"result":"Rate limit exceeded <promise>COMPLETE</promise>","session_id":"s1"}`,
				`{"type":"result","subtype":"success","is_error":true,"session_id":"s1"}`,
				`{"type":"result","subtype":"cancelled","session_id":"s1"}`,
				`{"type":"result","subtype":"success","is_error":false,"result":"ok","usage":{"inputTokens":12,"outputTokens":3,"cacheReadTokens":100,"cacheWriteTokens":7},"session_id":"s1"}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: "s1"},
				{Type: sdk.EventError, Text: "Rate limit exceeded <promise>COMPLETE</promise>"},
				{Type: sdk.EventError, Text: "cursor-agent: success result"},
				{Type: sdk.EventError, Text: "cursor-agent: cancelled result"},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 12, OutputTokens: 3, CacheReadInputTokens: 100, CacheCreationInputTokens: 7}},
				{Type: sdk.EventResult, Text: "ok"},
			},
		},
		{
			Name: "malformed, non-JSON and huge lines",
			Lines: []string{
				`Error: Not authenticated`,
				`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"torn`,
				`{"type":"assistant","message":"not an object"}`,
				`{"type":"assistant","message":{"content":[42,{"type":"text","text":7},{"type":"text","text":"a"},{"type":"text","text":"b"}]}}`,
				`{"type":"tool_call","subtype":"started","tool_call":{"function":{"name":""},"ToolCall":{},"lsToolCall":{"args":{"path":"/w"}}}}`,
				`{"type":"tool_call","subtype":"started","tool_call":"odd"}`,
				`{"type":"tool_call","subtype":"completed","tool_call":{"readToolCall":{"args":{"path":"/a"}}}}`,
				`{"type":"thinking","subtype":"delta","text":"hmm"}`,
				`[1,2]`,
				`{"type":"assistant","message":{"content":[{"type":"text","text":"` + huge + `"}]}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventText, Text: `Error: Not authenticated`},
				{Type: sdk.EventText, Text: `{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"torn`},
				{Type: sdk.EventText, Text: "ab"},
				{Type: sdk.EventToolCall, ToolName: "Ls", ToolArg: "/w"},
				{Type: sdk.EventText, Text: `[1,2]`},
				{Type: sdk.EventText, Text: huge},
			},
		},
	}
}

func TestReplay(t *testing.T) {
	t.Parallel()
	agenttest.Replay(t, New(), cty.NilVal, parseCases(t)...)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	agenttest.Run(t, New(), cty.NilVal)
}
