package pi

import (
	"encoding/json"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

type line struct {
	Type  string `json:"type"`
	ID    string `json:"id"` // session header
	Event *struct {
		Type  string `json:"type"`
		Delta string `json:"delta"`
	} `json:"assistantMessageEvent"`
	ToolName string          `json:"toolName"`
	Args     json.RawMessage `json:"args"`
	Message  *message        `json:"message"`
	Messages []message       `json:"messages"`
}

type message struct {
	Role    string `json:"role"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Usage *struct {
		Input      int64 `json:"input"`
		Output     int64 `json:"output"`
		CacheRead  int64 `json:"cacheRead"`
		CacheWrite int64 `json:"cacheWrite"`
	} `json:"usage"`
	StopReason   string `json:"stopReason"`
	ErrorMessage string `json:"errorMessage"`
}

func (m message) text() string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func (m message) failed() bool { return m.StopReason == "error" || m.StopReason == "aborted" }

// Parser parses one iteration of `pi --mode json`.
type Parser struct {
	usage    sdk.Usage // summed over assistant message_end events
	hasUsage bool
	ended    bool // agent_end seen
}

// NewParser returns a parser for one iteration.
func NewParser() *Parser { return &Parser{} }

// Parse implements sdk.Parser.
func (p *Parser) Parse(raw []byte) []sdk.Event {
	var l line
	if !agentkit.DecodeObject(raw, &l) {
		return agentkit.TextLine(raw)
	}
	switch l.Type {
	case "session":
		if l.ID != "" {
			return []sdk.Event{{Type: sdk.EventSessionID, SessionID: l.ID}}
		}
	case "message_update":
		if l.Event != nil && l.Event.Type == "text_delta" && l.Event.Delta != "" {
			return []sdk.Event{{Type: sdk.EventText, Text: l.Event.Delta}}
		}
	case "tool_execution_start":
		if l.ToolName != "" {
			return []sdk.Event{{Type: sdk.EventToolCall, ToolName: l.ToolName, ToolArg: agentkit.ToolArg(l.ToolName, l.Args)}}
		}
	case "message_end":
		m := l.Message
		if m == nil || m.Role != "assistant" {
			return nil
		}
		if u := m.Usage; u != nil {
			p.hasUsage = true
			p.usage = p.usage.Add(sdk.Usage{
				InputTokens:              u.Input,
				CacheCreationInputTokens: u.CacheWrite,
				CacheReadInputTokens:     u.CacheRead,
				OutputTokens:             u.Output,
			})
		}
		// pi has no error event and exits 0 in json mode: a failed model
		// call is an assistant message that stopped on error.
		if m.failed() {
			msg := m.ErrorMessage
			if msg == "" {
				msg = "pi: assistant message " + m.StopReason
			}
			return []sdk.Event{{Type: sdk.EventError, Text: msg}}
		}
	case "agent_end":
		p.ended = true
		evs := p.usageEvent()
		for i := len(l.Messages) - 1; i >= 0; i-- {
			if m := l.Messages[i]; m.Role == "assistant" {
				if !m.failed() {
					evs = append(evs, sdk.Event{Type: sdk.EventResult, Text: m.text()})
				}
				break
			}
		}
		return evs
	}
	return nil
}

func (p *Parser) usageEvent() []sdk.Event {
	if !p.hasUsage {
		return nil
	}
	u := p.usage
	return []sdk.Event{{Type: sdk.EventUsage, Usage: &u}}
}

// Close implements sdk.Parser: a stream cut before agent_end still reports
// its usage.
func (p *Parser) Close() []sdk.Event {
	if p.ended {
		return nil
	}
	return p.usageEvent()
}
