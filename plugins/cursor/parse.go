package cursor

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// line is the part of a `cursor-agent --output-format stream-json` line
// the parser reads. Nested parts are decoded on their own, so that one
// field of an unexpected shape loses that field, not the line.
type line struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	SessionID string          `json:"session_id"`
	Message   json.RawMessage `json:"message"`
	ToolCall  json.RawMessage `json:"tool_call"`
	IsError   json.RawMessage `json:"is_error"`
	Result    json.RawMessage `json:"result"`
	Usage     json.RawMessage `json:"usage"`
}

type part struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// usage is a result's token usage, when the CLI reports one: the
// documented format has none; input is the uncached prompt tokens.
type usage struct {
	Input      int64 `json:"inputTokens"`
	Output     int64 `json:"outputTokens"`
	CacheRead  int64 `json:"cacheReadTokens"`
	CacheWrite int64 `json:"cacheWriteTokens"`
}

// Parser parses one iteration of `cursor-agent --output-format
// stream-json`.
type Parser struct{ session agentkit.SessionOnce }

// NewParser returns a parser for one iteration.
func NewParser() *Parser { return &Parser{} }

// Parse implements sdk.Parser.
func (p *Parser) Parse(raw []byte) []sdk.Event {
	var l line
	if !agentkit.DecodeObject(raw, &l) {
		return agentkit.TextLine(raw)
	}
	evs := p.session.Event(l.SessionID)
	switch l.Type {
	case "assistant":
		var m struct {
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(l.Message, &m)
		var parts []json.RawMessage
		_ = json.Unmarshal(m.Content, &parts)
		var text strings.Builder
		for _, raw := range parts {
			var pt part
			if json.Unmarshal(raw, &pt) == nil && pt.Type == "text" {
				text.WriteString(pt.Text)
			}
		}
		if text.Len() > 0 {
			evs = append(evs, sdk.Event{Type: sdk.EventText, Text: text.String()})
		}
	case "tool_call":
		if l.Subtype == "started" {
			if name, arg, ok := toolCall(l.ToolCall); ok {
				evs = append(evs, sdk.Event{Type: sdk.EventToolCall, ToolName: name, ToolArg: arg})
			}
		}
	case "result":
		var u usage
		if agentkit.DecodeObject(l.Usage, &u) {
			evs = append(evs, sdk.Event{Type: sdk.EventUsage, Usage: &sdk.Usage{
				InputTokens: u.Input, OutputTokens: u.Output,
				CacheReadInputTokens: u.CacheRead, CacheCreationInputTokens: u.CacheWrite,
			}})
		}
		var text string
		var isError bool
		_ = json.Unmarshal(l.Result, &text)
		_ = json.Unmarshal(l.IsError, &isError)
		if isError || l.Subtype != "success" {
			if text == "" {
				text = "cursor-agent: " + strings.TrimSpace(l.Subtype+" result")
			}
			evs = append(evs, sdk.Event{Type: sdk.EventError, Text: text})
		} else {
			evs = append(evs, sdk.Event{Type: sdk.EventResult, Text: text})
		}
	}
	return evs
}

// toolCall reads a tool_call object: one key naming the tool, either a
// typed call ("shellToolCall": {"args": {...}}) or a generic one
// ("function": {"name": ..., "arguments": "<JSON>"}).
func toolCall(raw json.RawMessage) (name, arg string, ok bool) {
	var calls map[string]json.RawMessage
	if json.Unmarshal(raw, &calls) != nil {
		return "", "", false
	}
	// Sorted: a map's order would vary from one parse to the next.
	for _, key := range slices.Sorted(maps.Keys(calls)) {
		body := calls[key]
		if key == "function" {
			var f struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			}
			if json.Unmarshal(body, &f) != nil || f.Name == "" {
				continue
			}
			return f.Name, agentkit.ToolArg(f.Name, json.RawMessage(f.Arguments)), true
		}
		tool, typed := strings.CutSuffix(key, "ToolCall")
		if !typed || tool == "" {
			continue
		}
		var call struct {
			Args json.RawMessage `json:"args"`
		}
		_ = json.Unmarshal(body, &call)
		tool = strings.ToUpper(tool[:1]) + tool[1:]
		return tool, agentkit.ToolArg(tool, call.Args), true
	}
	return "", "", false
}

// Close implements sdk.Parser.
func (p *Parser) Close() []sdk.Event { return nil }
