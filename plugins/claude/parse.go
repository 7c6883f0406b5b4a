package claude

import (
	"encoding/json"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// line is the part of a stream-json line the parser reads. Nested parts
// are decoded on their own, so that one field of an unexpected shape loses
// that field, not the line.
type line struct {
	Type            string          `json:"type"`
	Subtype         string          `json:"subtype"`
	SessionID       string          `json:"session_id"`
	ParentToolUseID json.RawMessage `json:"parent_tool_use_id"`
	Message         json.RawMessage `json:"message"`
	IsError         json.RawMessage `json:"is_error"`
	Result          json.RawMessage `json:"result"`
	Errors          json.RawMessage `json:"errors"`
	Usage           json.RawMessage `json:"usage"`
}

type message struct {
	ID      string          `json:"id"`
	Content json.RawMessage `json:"content"`
	Usage   json.RawMessage `json:"usage"`
}

type block struct {
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type usage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

func decodeUsage(raw json.RawMessage) (usage, bool) {
	var u usage
	return u, len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &u) == nil
}

func (u usage) sdk() *sdk.Usage {
	return &sdk.Usage{
		InputTokens:              u.InputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens,
		OutputTokens:             u.OutputTokens,
	}
}

// errorText is the text of a result's errors: strings, or objects with a
// message.
func errorText(raw json.RawMessage) string {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return ""
	}
	var msgs []string
	for _, it := range items {
		var s string
		var o struct{ Message string }
		switch {
		case json.Unmarshal(it, &s) == nil && s != "":
			msgs = append(msgs, s)
		case json.Unmarshal(it, &o) == nil && o.Message != "":
			msgs = append(msgs, o.Message)
		}
	}
	return strings.Join(msgs, "; ")
}

// Parser parses one iteration of `claude --output-format stream-json`.
type Parser struct {
	sessionSeen bool
	resultSeen  bool
	// Per-message usage, for a stream that ends without a result line:
	// every content-block line of a message repeats its (growing) usage.
	msgUsage map[string]usage
	msgOrder []string
}

// NewParser returns a parser for one iteration.
func NewParser() *Parser { return &Parser{msgUsage: map[string]usage{}} }

// Parse implements sdk.Parser.
func (p *Parser) Parse(raw []byte) []sdk.Event {
	var l line
	if !agentkit.DecodeObject(raw, &l) {
		return agentkit.TextLine(raw)
	}
	var evs []sdk.Event
	if l.SessionID != "" && !p.sessionSeen {
		p.sessionSeen = true
		evs = append(evs, sdk.Event{Type: sdk.EventSessionID, SessionID: l.SessionID})
	}
	switch l.Type {
	case "assistant":
		var m message
		if json.Unmarshal(l.Message, &m) != nil {
			break
		}
		if u, ok := decodeUsage(m.Usage); ok && m.ID != "" {
			if _, seen := p.msgUsage[m.ID]; !seen {
				p.msgOrder = append(p.msgOrder, m.ID)
			}
			p.msgUsage[m.ID] = u
		}
		var parent string
		_ = json.Unmarshal(l.ParentToolUseID, &parent)
		var content []json.RawMessage
		_ = json.Unmarshal(m.Content, &content)
		for _, raw := range content {
			var b block
			if json.Unmarshal(raw, &b) != nil {
				continue
			}
			switch b.Type {
			case "text":
				// A subagent's text is not the agent's answer: it must not
				// complete the run.
				if parent == "" && b.Text != "" {
					evs = append(evs, sdk.Event{Type: sdk.EventText, Text: b.Text})
				}
			case "tool_use":
				if b.Name != "" {
					evs = append(evs, sdk.Event{Type: sdk.EventToolCall, ToolName: b.Name, ToolArg: agentkit.ToolArg(b.Name, b.Input)})
				}
			}
		}
	case "result":
		p.resultSeen = true
		if u, ok := decodeUsage(l.Usage); ok {
			evs = append(evs, sdk.Event{Type: sdk.EventUsage, Usage: u.sdk()})
		}
		var text string
		var isError bool
		_ = json.Unmarshal(l.Result, &text)
		_ = json.Unmarshal(l.IsError, &isError)
		if isError || (l.Subtype != "" && l.Subtype != "success") {
			msg := text
			if msg == "" {
				msg = errorText(l.Errors)
			}
			if msg == "" {
				msg = "claude: " + l.Subtype
			}
			evs = append(evs, sdk.Event{Type: sdk.EventError, Text: msg})
		} else {
			evs = append(evs, sdk.Event{Type: sdk.EventResult, Text: text})
		}
	}
	return evs
}

// Close implements sdk.Parser: a stream cut before its result line still
// reports the usage of the messages it carried.
func (p *Parser) Close() []sdk.Event {
	if p.resultSeen || len(p.msgOrder) == 0 {
		return nil
	}
	var total sdk.Usage
	for _, id := range p.msgOrder {
		total = total.Add(*p.msgUsage[id].sdk())
	}
	return []sdk.Event{{Type: sdk.EventUsage, Usage: &total}}
}
