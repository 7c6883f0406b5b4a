package codex

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agenttest"
)

const fixtureFinal = "Fixed the sign error in `src/sum.ts`; all tests pass.\n\n<promise>COMPLETE</promise>"

// tokenCountLine is a rollout's token_count line (codex 0.169) for a thread
// that used 879 input (500 cached) and 54 output tokens.
const tokenCountLine = `{"timestamp":"2026-07-01T10:00:09.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":879,"cached_input_tokens":500,"output_tokens":54,"reasoning_output_tokens":0,"total_tokens":933},"last_token_usage":{"input_tokens":879,"cached_input_tokens":500,"output_tokens":54,"reasoning_output_tokens":0,"total_tokens":933},"model_context_window":258400},"rate_limits":null}}`

func parseCases(t *testing.T) []agenttest.Case {
	huge := strings.Repeat("y", 2<<20)
	return []agenttest.Case{
		{
			Name:  "fixture",
			Lines: agenttest.ReadLines(t, "testdata/codex-stream.jsonl"),
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: session},
				{Type: sdk.EventText, Text: "I'll run the tests first to see what is failing."},
				{Type: sdk.EventToolCall, ToolName: "Bash", ToolArg: "npm test"},
				// The reconnect notice is a warning, not an error.
				{Type: sdk.EventWarning, Text: "Reconnecting... 1/5 (stream disconnected before completion: error sending request for url (https://api.openai.com/v1/responses))"},
				{Type: sdk.EventToolCall, ToolName: "Edit", ToolArg: "/home/agent/workspace/src/sum.ts"},
				{Type: sdk.EventToolCall, ToolName: "Bash", ToolArg: "npm test -- src/sum.test.ts"},
				{Type: sdk.EventText, Text: fixtureFinal},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 48210 - 40192, CacheReadInputTokens: 40192, OutputTokens: 1337}},
				{Type: sdk.EventResult, Text: fixtureFinal},
			},
		},
		{
			// turn.completed of a resumed thread is its running total; the
			// resume prelude prints the total before the turn.
			Name: "resumed thread",
			Lines: []string{
				tokenCountLine,
				`{"type":"thread.started","thread_id":"t0"}`,
				`{"type":"turn.started"}`,
				`{"type":"turn.completed","usage":{"input_tokens":2186,"cached_input_tokens":600,"output_tokens":95}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: "t0"},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 1307 - 100, CacheReadInputTokens: 100, OutputTokens: 41}},
			},
		},
		{
			Name: "turn failed",
			Lines: []string{
				`{"type":"thread.started","thread_id":"t1"}`,
				`{"type":"turn.started"}`,
				`{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}`,
				`{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized"}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: "t1"},
				{Type: sdk.EventWarning, Text: "Reconnecting... 1/5 (stream disconnected before completion)"},
				{Type: sdk.EventError, Text: "unexpected status 401 Unauthorized"},
			},
		},
		{
			Name: "stream cut after reconnect notices",
			Lines: []string{
				`{"type":"thread.started","thread_id":"t2"}`,
				`{"type":"turn.started"}`,
				`{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for ` + "`gpt-5.4`" + ` not found."}}`,
				`{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion)"}`,
				`{"type":"error","message":"Reconnecting... 5/5 (stream disconnected before completion)"}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: "t2"},
				{Type: sdk.EventWarning, Text: "Model metadata for `gpt-5.4` not found."},
				{Type: sdk.EventWarning, Text: "Reconnecting... 2/5 (stream disconnected before completion)"},
				{Type: sdk.EventWarning, Text: "Reconnecting... 5/5 (stream disconnected before completion)"},
				{Type: sdk.EventError, Text: "Reconnecting... 5/5 (stream disconnected before completion)"},
			},
		},
		{
			Name: "completion signal split across messages, stream cut before turn end",
			Lines: []string{
				`{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"all done <promise>COMP"}}`,
				`{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"LETE</promise>"}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventText, Text: "all done <promise>COMP"},
				{Type: sdk.EventText, Text: "LETE</promise>"},
				{Type: sdk.EventResult, Text: "LETE</promise>"},
			},
		},
		{
			Name: "other tools",
			Lines: []string{
				`{"type":"item.started","item":{"id":"item_1","type":"mcp_tool_call","server":"github","tool":"get_issue","arguments":{"url":"https://github.com/o/r/issues/1"},"status":"in_progress"}}`,
				`{"type":"item.completed","item":{"id":"item_1","type":"mcp_tool_call","server":"github","tool":"get_issue","status":"completed"}}`,
				`{"type":"item.completed","item":{"id":"item_2","type":"web_search","query":"go-cty object"}}`,
				`{"type":"item.started","item":{"id":"item_3","type":"command_execution","command":"bash -c \"echo 'hi'\"","status":"in_progress"}}`,
				`{"type":"item.started","item":{"id":"item_4","type":"command_execution","command":"/bin/bash -lc 'echo '\\''quoted'\\'''","status":"in_progress"}}`,
				`{"type":"item.started","item":{"id":"item_5","type":"command_execution","command":"ls -la","status":"in_progress"}}`,
				`{"type":"item.updated","item":{"id":"item_6","type":"todo_list","items":[{"text":"a","completed":false}]}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventToolCall, ToolName: "github.get_issue", ToolArg: "https://github.com/o/r/issues/1"},
				{Type: sdk.EventToolCall, ToolName: "WebSearch", ToolArg: "go-cty object"},
				{Type: sdk.EventToolCall, ToolName: "Bash", ToolArg: "echo 'hi'"},
				{Type: sdk.EventToolCall, ToolName: "Bash", ToolArg: "echo 'quoted'"},
				{Type: sdk.EventToolCall, ToolName: "Bash", ToolArg: "ls -la"},
			},
		},
		{
			Name: "malformed, non-JSON and huge lines",
			Lines: []string{
				`Reading prompt from stdin...`,
				`{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"torn`,
				`{"type":"item.completed","item":"not an object"}`,
				`{"type":"item.started","item":{"id":"item_9","type":"command_execution","command":["bash","-lc","make"],"changes":"odd"}}`,
				`{"type":"item.completed","item":{"id":"item_10","type":"file_change","changes":[7,{"path":"/w/a.go","kind":"add"}]}}`,
				`{"type":"turn.failed","error":"plain string error"}`,
				`{"type":"turn.started"}`,
				``,
				`{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"` + huge + `"}}`,
				`{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":4,"output_tokens":2,"reasoning_output_tokens":1}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventText, Text: `Reading prompt from stdin...`},
				{Type: sdk.EventText, Text: `{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"torn`},
				{Type: sdk.EventToolCall, ToolName: "Bash", ToolArg: "make"},
				{Type: sdk.EventToolCall, ToolName: "Edit", ToolArg: "/w/a.go"},
				{Type: sdk.EventError, Text: "plain string error"},
				{Type: sdk.EventText, Text: ``},
				{Type: sdk.EventText, Text: huge},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 6, CacheReadInputTokens: 4, OutputTokens: 2}},
				{Type: sdk.EventResult, Text: huge},
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
