package copilot

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agenttest"
)

const commitCommand = `echo e2e >> e2e.txt && git add e2e.txt && git -c user.name=agent -c user.email=agent@example.com commit -qm 'e2e: agent commit'`

func parseCases(t *testing.T) []agenttest.Case {
	huge := strings.Repeat("x", 3<<20)
	return []agenttest.Case{
		{
			// Real Copilot CLI 1.0.102 output through the print-mode
			// wrapper, against a scripted Chat Completions server: a bash
			// call, a final text, then the session's two usage records.
			Name:  "real stream",
			Lines: agenttest.ReadLines(t, "testdata/copilot-stream.jsonl"),
			Want: []sdk.Event{
				{Type: sdk.EventToolCall, ToolName: "bash", ToolArg: commitCommand},
				{Type: sdk.EventText, Text: "Committed e2e.txt. <promise>COMPLETE</promise>"},
				{Type: sdk.EventSessionID, SessionID: "e249fdda-06fe-4d25-970e-42546e7bc770"},
				{Type: sdk.EventResult, Text: "Committed e2e.txt. <promise>COMPLETE</promise>"},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 100, CacheReadInputTokens: 50, OutputTokens: 12}},
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 200, CacheReadInputTokens: 100, OutputTokens: 24}},
			},
		},
		{
			// Real 1.0.102 output when the provider answers 401 three
			// times: retries are warnings; the error carries the provider's
			// message, which the CLI's own leaves out; the CLI exits 1.
			Name:  "real 401",
			Lines: agenttest.ReadLines(t, "testdata/copilot-401.jsonl"),
			Want: []sdk.Event{
				{Type: sdk.EventWarning, Text: "Request failed due to a transient API error. Retrying..."},
				{Type: sdk.EventWarning, Text: "Request failed due to a transient API error. Retrying..."},
				{Type: sdk.EventError, Text: "Authentication failed with provider at http://127.0.0.1:8080/v1 (HTTP 401).\n  Check your COPILOT_PROVIDER_API_KEY, COPILOT_PROVIDER_API_KEY_COMMAND, or COPILOT_PROVIDER_BEARER_TOKEN.\nProvider error: scripted 401: invalid api key"},
				{Type: sdk.EventSessionID, SessionID: "18c6cba5-9942-4d13-b590-9c4ffbacea71"},
			},
		},
		{
			// An error the session reports fails the iteration even when
			// the CLI exits 0; a nonzero exit without one is an error too.
			Name: "errors",
			Lines: []string{
				`{"type":"model.call_failure","data":{"statusCode":500,"errorMessage":"upstream timed out"}}`,
				`{"type":"session.error","data":{"errorType":"rate_limit","message":"Rate limited"}}`,
				`{"type":"result","sessionId":"s1","exitCode":0}`,
				`{"type":"result","sessionId":"s1","exitCode":2}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventError, Text: "Rate limited\nProvider error: upstream timed out"},
				{Type: sdk.EventSessionID, SessionID: "s1"},
			},
		},
		{
			Name: "exit code without a session error",
			Lines: []string{
				`{"type":"assistant.message","data":{"content":"partial"}}`,
				`{"type":"result","sessionId":"s2","exitCode":1}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventText, Text: "partial"},
				{Type: sdk.EventSessionID, SessionID: "s2"},
				{Type: sdk.EventError, Text: "copilot: the session ended with exit code 1"},
			},
		},
		{
			Name: "subagent text is not agent text, its tools are shown",
			Lines: []string{
				`{"type":"assistant.message","data":{"content":"<promise>COMPLETE</promise>","parentToolCallId":"call_1","toolRequests":[{"name":"grep","arguments":{"pattern":"TODO"}}]}}`,
				`{"type":"session.warning","data":{"warningType":"mcp","message":"MCP server x failed to start"}}`,
				`{"type":"session.info","data":{"infoType":"model","message":"Model changed"}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventToolCall, ToolName: "grep", ToolArg: "TODO"},
				{Type: sdk.EventWarning, Text: "MCP server x failed to start"},
			},
		},
		{
			// 1.0.102 with an Anthropic provider (COPILOT_PROVIDER_TYPE):
			// its 100 uncached, 50 cache read and 20 cache written input
			// tokens are recorded as inputTokens 170.
			Name: "usage with cache writes",
			Lines: []string{
				`{"type":"session.usage_record","data":{"usage":{"model":"claude-sonnet-4.5","inputTokens":170,"outputTokens":12,"cacheReadTokens":50,"cacheWriteTokens":20,"providerType":"anthropic","apiEndpoint":"/v1/messages"}}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventUsage, Usage: &sdk.Usage{InputTokens: 100, CacheReadInputTokens: 50, CacheCreationInputTokens: 20, OutputTokens: 12}},
			},
		},
		{
			Name: "malformed, non-JSON and huge lines",
			Lines: []string{
				`Warning: something on stdout`,
				`{"type":"assistant.message","data":{"content":"torn`,
				`{"type":"assistant.message","data":"not an object"}`,
				`{"type":"assistant.message","data":{"content":7,"toolRequests":[42,{"name":"view","arguments":{"path":"/a"}}]}}`,
				`{"type":"session.usage_record","data":{"usage":"odd"}}`,
				`{"type":"model.call_failure","data":{"errorMessage":{"nested":true}}}`,
				`[1,2]`,
				`{"type":"assistant.message","data":{"content":"` + huge + `"}}`,
			},
			Want: []sdk.Event{
				{Type: sdk.EventText, Text: `Warning: something on stdout`},
				{Type: sdk.EventText, Text: `{"type":"assistant.message","data":{"content":"torn`},
				// A JSON event of an unexpected shape loses what does not fit.
				{Type: sdk.EventToolCall, ToolName: "view", ToolArg: "/a"},
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
