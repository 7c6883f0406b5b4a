package opencode

import (
	"encoding/json"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// line is the part of a `--format json` line the parser reads. Nested
// parts are decoded on their own, so that one field of an unexpected shape
// loses that field, not the line.
type line struct {
	Type      string          `json:"type"`
	SessionID string          `json:"sessionID"`
	Part      json.RawMessage `json:"part"`
	Error     json.RawMessage `json:"error"`
}

type part struct {
	Text   string          `json:"text"`
	Tool   string          `json:"tool"`
	State  json.RawMessage `json:"state"`
	Tokens json.RawMessage `json:"tokens"`
}

type tokens struct {
	Input  int64 `json:"input"`
	Output int64 `json:"output"`
	Cache  struct {
		Read  int64 `json:"read"`
		Write int64 `json:"write"`
	} `json:"cache"`
}

// errorText is the message of an error object: data.message, message or
// the error's name.
func errorText(raw json.RawMessage) string {
	var e struct {
		Name    json.RawMessage `json:"name"`
		Message json.RawMessage `json:"message"`
		Data    json.RawMessage `json:"data"`
	}
	_ = json.Unmarshal(raw, &e)
	var data struct {
		Message json.RawMessage `json:"message"`
	}
	_ = json.Unmarshal(e.Data, &data)
	var msg, name string
	if json.Unmarshal(data.Message, &msg) == nil && msg != "" {
		return msg
	}
	if json.Unmarshal(e.Message, &msg) == nil && msg != "" {
		return msg
	}
	if json.Unmarshal(e.Name, &name) == nil && name != "" {
		return "opencode: " + name
	}
	return "opencode: error"
}

// Parser parses one iteration of `opencode run --format json`.
type Parser struct {
	session agentkit.SessionOnce
	last    string // last text part: the result, as opencode has no result line
	hasLast bool
	usage   agentkit.UsageSum // over step_finish events
}

// NewParser returns a parser for one iteration.
func NewParser() *Parser { return &Parser{} }

// Parse implements sdk.Parser.
func (p *Parser) Parse(raw []byte) []sdk.Event {
	var l line
	if !agentkit.DecodeObject(raw, &l) {
		return agentkit.TextLine(raw)
	}
	evs := p.session.Event(l.SessionID)
	var pt part
	_ = json.Unmarshal(l.Part, &pt)
	switch l.Type {
	case "text":
		if pt.Text != "" {
			p.last, p.hasLast = pt.Text, true
			evs = append(evs, sdk.Event{Type: sdk.EventText, Text: pt.Text})
		}
	case "tool_use":
		if pt.Tool != "" {
			var state struct {
				Input json.RawMessage `json:"input"`
			}
			_ = json.Unmarshal(pt.State, &state)
			evs = append(evs, sdk.Event{Type: sdk.EventToolCall, ToolName: pt.Tool, ToolArg: agentkit.ToolArg(pt.Tool, state.Input)})
		}
	case "step_finish":
		var t tokens
		if agentkit.DecodeObject(pt.Tokens, &t) {
			p.usage.Add(sdk.Usage{
				InputTokens:              t.Input,
				CacheCreationInputTokens: t.Cache.Write,
				CacheReadInputTokens:     t.Cache.Read,
				OutputTokens:             t.Output,
			})
		}
	case "error":
		evs = append(evs, sdk.Event{Type: sdk.EventError, Text: errorText(l.Error)})
	}
	return evs
}

// Close implements sdk.Parser: the iteration's usage is the sum of its
// steps, its result the last text part.
func (p *Parser) Close() []sdk.Event {
	evs := p.usage.Events()
	if p.hasLast {
		evs = append(evs, sdk.Event{Type: sdk.EventResult, Text: p.last})
	}
	return evs
}
