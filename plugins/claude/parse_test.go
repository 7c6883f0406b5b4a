package claude

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agenttest"
)

const (
	fixtureSession = "3f6c2a9e-8d41-4b7e-9a53-1c0e7d2b6f48"
	fixtureFinal   = "Fixed the sign error in `src/sum.ts`; the failing test now passes.\n\n<promise>COMPLETE</promise>"
)

func parseCases(t *testing.T) []agenttest.Case {
	huge := strings.Repeat("x", 3<<20)
	return []agenttest.Case{
		{
			Name:  "fixture",
			Lines: agenttest.ReadLines(t, "testdata/claude-stream.jsonl"),
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: fixtureSession},
				{Type: sdk.EventText, Text: "I'll start by running the test suite to see what is failing."},
				{Type: sdk.EventToolCall, ToolName: "Bash", ToolArg: "npm test"},
				{Type: sdk.EventText, Text: "The `sum` helper subtracts instead of adding. Fixing it now."},
				{Type: sdk.EventToolCall, ToolName: "Edit", ToolArg: "/home/agent/workspace/src/sum.ts"},
				{Type: sdk.EventText, Text: fixtureFinal},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 13, CacheCreationInputTokens: 6750, CacheReadInputTokens: 51290, OutputTokens: 271}},
				{Type: sdk.EventResult, Text: fixtureFinal},
			},
		},
		{
			// Real Claude Code 2.1.197 output without credentials.
			Name: "not logged in",
			Lines: []string{
				`{"type":"system","subtype":"init","cwd":"/tmp","session_id":"db0166d8-b5cd-400f-b76e-b3a297fd78e5","model":"claude-opus-4-8","permissionMode":"default","apiKeySource":"none","claude_code_version":"2.1.197"}`,
				`{"type":"assistant","message":{"id":"2565c095-e343-48d7-8ade-b43a8126a5c2","model":"<synthetic>","role":"assistant","stop_reason":"stop_sequence","type":"message","usage":{"input_tokens":0,"output_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0},"content":[{"type":"text","text":"Not logged in · Please run /login"}]},"parent_tool_use_id":null,"session_id":"db0166d8-b5cd-400f-b76e-b3a297fd78e5","error":"authentication_failed"}`,
				`{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"num_turns":1,"result":"Not logged in · Please run /login","session_id":"db0166d8-b5cd-400f-b76e-b3a297fd78e5","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: "db0166d8-b5cd-400f-b76e-b3a297fd78e5"},
				{Type: sdk.EventText, Text: "Not logged in · Please run /login"},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{}},
				{Type: sdk.EventError, Text: "Not logged in · Please run /login"},
			},
		},
		{
			// Claude Code retries a failed API call itself: a warning. The
			// call that finally fails ends in an error result, exit 0 or not.
			Name: "API retries, then an error result",
			Lines: []string{
				`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":500,"error_status":529,"error":"overloaded","session_id":"s0"}`,
				`{"type":"system","subtype":"api_retry","attempt":2,"max_retries":10,"retry_delay_ms":1000,"error_status":529,"session_id":"s0"}`,
				`{"type":"assistant","message":{"id":"m9","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error: 529 overloaded"}]},"parent_tool_use_id":null,"session_id":"s0","error":"overloaded"}`,
				`{"type":"result","subtype":"error_during_execution","is_error":true,"api_error_status":529,"result":"API Error: 529 overloaded <promise>COMPLETE</promise>","session_id":"s0"}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: "s0"},
				{Type: sdk.EventWarning, Text: "API call failed, retrying (attempt 1 of 10): overloaded"},
				{Type: sdk.EventWarning, Text: "API call failed, retrying (attempt 2 of 10): 529"},
				{Type: sdk.EventText, Text: "API Error: 529 overloaded"},
				{Type: sdk.EventError, Text: "API Error: 529 overloaded <promise>COMPLETE</promise>"},
			},
		},
		{
			Name: "error subtype without text",
			Lines: []string{
				`{"type":"result","subtype":"error_max_turns","is_error":false,"errors":["Reached max turns (3)"],"session_id":"s1"}`,
				`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":[{"message":"tool crashed"}],"session_id":"s1"}`,
				`{"type":"result","subtype":"error_during_execution","is_error":true,"session_id":"s1"}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: "s1"},
				{Type: sdk.EventError, Text: "Reached max turns (3)"},
				{Type: sdk.EventError, Text: "tool crashed"},
				{Type: sdk.EventError, Text: "claude: error_during_execution"},
			},
		},
		{
			Name: "completion signal split across messages",
			Lines: []string{
				`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"done <promise>COMP"}]},"session_id":"s2"}`,
				`{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"LETE</promise>"}]},"session_id":"s2"}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: "s2"},
				{Type: sdk.EventText, Text: "done <promise>COMP"},
				{Type: sdk.EventText, Text: "LETE</promise>"},
			},
		},
		{
			Name: "subagent text is not agent text, its tools are shown",
			Lines: []string{
				`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"<promise>COMPLETE</promise>"},{"type":"tool_use","name":"Grep","input":{"pattern":"TODO","path":"src"}}]},"parent_tool_use_id":"toolu_1"}`,
			},
			Want: []sdk.Event{{Type: sdk.EventToolCall, ToolName: "Grep", ToolArg: "TODO"}},
		},
		{
			Name: "malformed, non-JSON and huge lines",
			Lines: []string{
				`Warning: something on stdout`,
				`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"torn`,
				`{"type":"assistant","message":"not an object"}`,
				`{"type":"assistant","message":{"id":"m0","content":"a string","usage":"odd"}}`,
				`{"type":"assistant","message":{"id":"m0","content":[42,{"type":"text","text":7},{"type":"tool_use","name":"Read","input":{"file_path":"/a"}}]}}`,
				`[1,2]`,
				`{"type":"system","subtype":"api_retry","attempt":1,"error":"unknown"}`,
				`{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"` + huge + `"}],"usage":{"input_tokens":1,"output_tokens":2}}}`,
				`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","name":"WebFetch","input":{"url":"https://example.com"}}],"usage":{"input_tokens":1,"output_tokens":5}}}`,
				`{"type":"assistant","message":{"id":"m2","content":[],"usage":{"input_tokens":3,"cache_read_input_tokens":7,"output_tokens":1}}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventText, Text: `Warning: something on stdout`},
				{Type: sdk.EventText, Text: `{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"torn`},
				// A JSON event of an unexpected shape loses what does not fit.
				{Type: sdk.EventToolCall, ToolName: "Read", ToolArg: "/a"},
				{Type: sdk.EventText, Text: `[1,2]`},
				{Type: sdk.EventWarning, Text: "API call failed, retrying (attempt 1): unknown"},
				{Type: sdk.EventText, Text: huge},
				{Type: sdk.EventToolCall, ToolName: "WebFetch", ToolArg: "https://example.com"},
				// No result line: usage is summed over distinct messages, last
				// usage of each.
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 4, CacheReadInputTokens: 7, OutputTokens: 6}},
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
