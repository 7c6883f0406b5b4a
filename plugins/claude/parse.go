package claude

import (
	"encoding/json"
	"fmt"
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
	// system/api_retry
	Attempt     int             `json:"attempt"`
	MaxRetries  int             `json:"max_retries"`
	ErrorStatus json.RawMessage `json:"error_status"`
	Error       json.RawMessage `json:"error"`
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

// decodeUsage reads a usage object: its fields are sdk.Usage's.
func decodeUsage(raw json.RawMessage) (sdk.Usage, bool) {
	var u sdk.Usage
	ok := agentkit.DecodeObject(raw, &u)
	return u, ok
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
		if m := agentkit.MessageText(it); m != "" {
			msgs = append(msgs, m)
		}
	}
	return strings.Join(msgs, "; ")
}

// retryText describes an api_retry line: Claude Code retries the API call
// itself, so it is a warning, not the iteration's error.
func retryText(l *line) string {
	why := agentkit.MessageText(l.Error)
	if why == "" {
		why = strings.Trim(string(l.ErrorStatus), `"`)
	}
	msg := fmt.Sprintf("API call failed, retrying (attempt %d", l.Attempt)
	if l.MaxRetries > 0 {
		msg += fmt.Sprintf(" of %d", l.MaxRetries)
	}
	msg += ")"
	if why != "" && why != "null" {
		msg += ": " + why
	}
	return msg
}

// Parser parses one iteration of `claude --output-format stream-json`.
type Parser struct {
	session    agentkit.SessionOnce
	resultSeen bool
	// Per-message usage, for a stream that ends without a result line:
	// every content-block line of a message repeats its (growing) usage.
	msgUsage map[string]sdk.Usage
	msgOrder []string
}

// NewParser returns a parser for one iteration.
func NewParser() *Parser { return &Parser{msgUsage: map[string]sdk.Usage{}} }

// Parse implements sdk.Parser.
func (p *Parser) Parse(raw []byte) []sdk.Event {
	var l line
	if !agentkit.DecodeObject(raw, &l) {
		return agentkit.TextLine(raw)
	}
	evs := p.session.Event(l.SessionID)
	switch l.Type {
	case "system":
		if l.Subtype == "api_retry" {
			evs = append(evs, sdk.Event{Type: sdk.EventWarning, Text: retryText(&l)})
		}
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
			evs = append(evs, sdk.Event{Type: sdk.EventUsage, Usage: &u})
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
	if p.resultSeen {
		return nil
	}
	var total agentkit.UsageSum
	for _, id := range p.msgOrder {
		total.Add(p.msgUsage[id])
	}
	return total.Events()
}
