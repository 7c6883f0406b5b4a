package opencode

import (
	"encoding/json"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

type line struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      *struct {
		Text  string `json:"text"`
		Tool  string `json:"tool"`
		State *struct {
			Input json.RawMessage `json:"input"`
		} `json:"state"`
		Tokens *struct {
			Input  int64 `json:"input"`
			Output int64 `json:"output"`
			Cache  struct {
				Read  int64 `json:"read"`
				Write int64 `json:"write"`
			} `json:"cache"`
		} `json:"tokens"`
	} `json:"part"`
	Error *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
		Data    struct {
			Message string `json:"message"`
		} `json:"data"`
	} `json:"error"`
}

// Parser parses one iteration of `opencode run --format json`.
type Parser struct {
	sessionSeen bool
	last        string // last text part: the result, as opencode has no result line
	hasLast     bool
	usage       sdk.Usage // summed over step_finish events
	hasUsage    bool
}

// NewParser returns a parser for one iteration.
func NewParser() *Parser { return &Parser{} }

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
	case "text":
		if l.Part != nil && l.Part.Text != "" {
			p.last, p.hasLast = l.Part.Text, true
			evs = append(evs, sdk.Event{Type: sdk.EventText, Text: l.Part.Text})
		}
	case "tool_use":
		if l.Part != nil && l.Part.Tool != "" {
			arg := ""
			if l.Part.State != nil {
				arg = agentkit.ToolArg(l.Part.Tool, l.Part.State.Input)
			}
			evs = append(evs, sdk.Event{Type: sdk.EventToolCall, ToolName: l.Part.Tool, ToolArg: arg})
		}
	case "step_finish":
		if l.Part != nil && l.Part.Tokens != nil {
			t := l.Part.Tokens
			p.hasUsage = true
			p.usage = p.usage.Add(sdk.Usage{
				InputTokens:              t.Input,
				CacheCreationInputTokens: t.Cache.Write,
				CacheReadInputTokens:     t.Cache.Read,
				OutputTokens:             t.Output,
			})
		}
	case "error":
		msg := "opencode: error"
		if e := l.Error; e != nil {
			switch {
			case e.Data.Message != "":
				msg = e.Data.Message
			case e.Message != "":
				msg = e.Message
			case e.Name != "":
				msg = "opencode: " + e.Name
			}
		}
		evs = append(evs, sdk.Event{Type: sdk.EventError, Text: msg})
	}
	return evs
}

// Close implements sdk.Parser: the iteration's usage is the sum of its
// steps, its result the last text part.
func (p *Parser) Close() []sdk.Event {
	var evs []sdk.Event
	if p.hasUsage {
		u := p.usage
		evs = append(evs, sdk.Event{Type: sdk.EventUsage, Usage: &u})
	}
	if p.hasLast {
		evs = append(evs, sdk.Event{Type: sdk.EventResult, Text: p.last})
	}
	return evs
}
