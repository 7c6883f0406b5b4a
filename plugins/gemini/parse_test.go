package gemini

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agenttest"
)

func parseCases(t *testing.T) []agenttest.Case {
	huge := strings.Repeat("x", 3<<20)
	commit := "echo e2e >> e2e.txt && git add e2e.txt && git -c user.name=agent -c user.email=agent@example.com commit -qm 'e2e: agent commit'"
	final := "Committed e2e.txt. <promise>COMPLETE</promise>"
	return []agenttest.Case{
		{
			// Gemini CLI 0.61.0 against the scripted Gemini API of agents-e2e.
			Name:  "fixture",
			Lines: agenttest.ReadLines(t, "testdata/gemini-stream-0.61.0.jsonl"),
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: "ca2d12da-70b1-4444-b697-72c56a00f629"},
				{Type: sdk.EventToolCall, ToolName: "run_shell_command", ToolArg: commit},
				{Type: sdk.EventText, Text: final},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 200, CacheReadInputTokens: 100, OutputTokens: 24}},
				{Type: sdk.EventResult, Text: final},
			},
		},
		{
			// 0.61.0's stream when the API answers 401 (it exits 145).
			Name: "API error",
			Lines: []string{
				`{"type":"init","timestamp":"2026-11-27T20:12:39.446Z","session_id":"46421713-f124-44a3-86c5-c049eb346e39","model":"gemini-2.5-flash"}`,
				`{"type":"message","timestamp":"2026-11-27T20:12:39.451Z","role":"user","content":"hi\n"}`,
				`{"type":"result","timestamp":"2026-11-27T20:12:39.817Z","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":401,\"message\":\"scripted 401: invalid api key\",\"status\":\"UNAUTHENTICATED\"}}]"},"stats":{"total_tokens":0,"input_tokens":0,"output_tokens":0,"cached":0,"input":0,"duration_ms":0,"tool_calls":0,"models":{}}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: "46421713-f124-44a3-86c5-c049eb346e39"},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{}},
				{Type: sdk.EventError, Text: "API error 401 UNAUTHENTICATED: scripted 401: invalid api key"},
			},
		},
		{
			// An invalid stream: an error event, then an error result without
			// a message (exit 0). Deltas make one message; a warning is shown.
			Name: "error event, then error result",
			Lines: []string{
				`{"type":"init","session_id":"s1","model":"gemini-2.5-pro"}`,
				`{"type":"message","role":"assistant","content":"Looking <promise>COMP","delta":true}`,
				`{"type":"message","role":"assistant","content":"LETE</promise>","delta":true}`,
				`{"type":"error","severity":"warning","message":"Loop detected, stopping execution"}`,
				`{"type":"error","severity":"error","message":"Model stream ended with an invalid chunk or missing finish reason."}`,
				`{"type":"result","status":"error","stats":{"total_tokens":40,"input_tokens":30,"output_tokens":4,"cached":0,"input":30}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventSessionID, SessionID: "s1"},
				{Type: sdk.EventText, Text: "Looking <promise>COMPLETE</promise>"},
				{Type: sdk.EventWarning, Text: "Loop detected, stopping execution"},
				{Type: sdk.EventError, Text: "Model stream ended with an invalid chunk or missing finish reason."},
				// Thinking tokens: the total beyond the prompt and the answer.
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 30, OutputTokens: 10}},
			},
		},
		{
			Name: "error results",
			Lines: []string{
				`{"type":"result","status":"error","error":{"type":"FatalTurnLimitedError","message":"Reached max session turns for this session."}}`,
				`{"type":"result","status":"error"}`,
				`{"type":"result","status":"success","error":"odd"}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventError, Text: "Reached max session turns for this session."},
				{Type: sdk.EventError, Text: "gemini: the turn ended in an error"},
				{Type: sdk.EventError, Text: "odd"},
			},
		},
		{
			Name: "malformed, non-JSON and huge lines; a stream cut mid-message",
			Lines: []string{
				`Warning: something on stdout`,
				`{"type":"message","role":"assistant","content":"torn`,
				`{"type":"tool_use","tool_name":"read_file","parameters":"not an object"}`,
				`{"type":"tool_use","tool_name":"write_file","parameters":{"file_path":"src/a.go","content":"x"}}`,
				`{"type":"tool_use","parameters":{"command":"ls"}}`,
				`{"type":"result","status":"success","stats":"odd"}`,
				`[1,2]`,
				`{"type":"message","role":"assistant","content":42}`,
				`{"type":"message","role":"assistant","content":"` + huge + `"}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventText, Text: `Warning: something on stdout`},
				{Type: sdk.EventText, Text: `{"type":"message","role":"assistant","content":"torn`},
				{Type: sdk.EventToolCall, ToolName: "read_file"},
				{Type: sdk.EventToolCall, ToolName: "write_file", ToolArg: "src/a.go"},
				{Type: sdk.EventResult},
				{Type: sdk.EventText, Text: `[1,2]`},
				// Close: the cut message's text; no usage without a result.
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
