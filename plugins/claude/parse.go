package claude

import (
	"encoding/json"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// line is the part of a stream-json line the parser reads.
type line struct {
	Type            string   `json:"type"`
	Subtype         string   `json:"subtype"`
	SessionID       string   `json:"session_id"`
	ParentToolUseID *string  `json:"parent_tool_use_id"`
	Message         *message `json:"message"`
	IsError         bool     `json:"is_error"`
	Result          *string  `json:"result"`
	Errors          []string `json:"errors"`
	Usage           *usage   `json:"usage"`
}

type message struct {
	ID      string  `json:"id"`
	Content []block `json:"content"`
	Usage   *usage  `json:"usage"`
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

func (u usage) sdk() *sdk.Usage {
	return &sdk.Usage{
		InputTokens:              u.InputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens,
		OutputTokens:             u.OutputTokens,
	}
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
		if l.Message == nil {
			break
		}
		if u := l.Message.Usage; u != nil && l.Message.ID != "" {
			if _, ok := p.msgUsage[l.Message.ID]; !ok {
				p.msgOrder = append(p.msgOrder, l.Message.ID)
			}
			p.msgUsage[l.Message.ID] = *u
		}
		subagent := l.ParentToolUseID != nil && *l.ParentToolUseID != ""
		for _, b := range l.Message.Content {
			switch b.Type {
			case "text":
				// A subagent's text is not the agent's answer: it must not
				// complete the run.
				if !subagent && b.Text != "" {
					evs = append(evs, sdk.Event{Type: sdk.EventText, Text: b.Text})
				}
			case "tool_use":
				evs = append(evs, sdk.Event{Type: sdk.EventToolCall, ToolName: b.Name, ToolArg: agentkit.ToolArg(b.Name, b.Input)})
			}
		}
	case "result":
		p.resultSeen = true
		if l.Usage != nil {
			evs = append(evs, sdk.Event{Type: sdk.EventUsage, Usage: l.Usage.sdk()})
		}
		text := ""
		if l.Result != nil {
			text = *l.Result
		}
		if l.IsError || (l.Subtype != "" && l.Subtype != "success") {
			msg := text
			if msg == "" {
				msg = strings.Join(l.Errors, "; ")
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
