package gemini

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
	Type      string          `json:"type"`
	SessionID string          `json:"session_id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	// tool_use
	ToolName   string          `json:"tool_name"`
	Parameters json.RawMessage `json:"parameters"`
	// error
	Severity string `json:"severity"`
	Message  string `json:"message"`
	// result
	Status string          `json:"status"`
	Error  json.RawMessage `json:"error"`
	Stats  json.RawMessage `json:"stats"`
}

// stats is a result's token usage, summed over the models the iteration
// called: input_tokens is the prompt with its cached part, input the rest;
// output_tokens leaves out thinking, which total_tokens counts.
type stats struct {
	Total  int64 `json:"total_tokens"`
	Prompt int64 `json:"input_tokens"`
	Output int64 `json:"output_tokens"`
	Cached int64 `json:"cached"`
}

func (s stats) usage() sdk.Usage {
	// Thinking is billed as output: whatever the total holds beyond the
	// prompt and the answer.
	out := max(s.Output, s.Total-s.Prompt)
	return sdk.Usage{InputTokens: max(s.Prompt-s.Cached, 0), CacheReadInputTokens: s.Cached, OutputTokens: out}
}

// apiError shortens the CLI's "[API Error: <the API's JSON error>]" to
// the API's status and message; other messages stay as they are.
func apiError(msg string) string {
	inner, ok := strings.CutPrefix(msg, "[API Error: ")
	if !ok {
		return msg
	}
	if inner, ok = strings.CutSuffix(inner, "]"); !ok {
		return msg
	}
	var e struct {
		Error struct {
			Code            int
			Message, Status string
		}
	}
	if json.Unmarshal([]byte(inner), &e) != nil || e.Error.Message == "" {
		return msg
	}
	return fmt.Sprintf("API error %d %s: %s", e.Error.Code, e.Error.Status, e.Error.Message)
}

// Parser parses one iteration of `gemini --output-format stream-json`.
// The assistant's text comes in deltas: a message is the text between two
// other events, emitted as one text event.
type Parser struct {
	session agentkit.SessionOnce
	text    strings.Builder
	// last is the last complete assistant message, the result's text.
	last string
	// errMsg is the last error event's message, which the error result
	// that follows may repeat.
	errMsg string
}

// NewParser returns a parser for one iteration.
func NewParser() *Parser { return &Parser{} }

// flush ends the assistant message being streamed.
func (p *Parser) flush() []sdk.Event {
	if p.text.Len() == 0 {
		return nil
	}
	p.last = p.text.String()
	p.text.Reset()
	return []sdk.Event{{Type: sdk.EventText, Text: p.last}}
}

// Parse implements sdk.Parser.
func (p *Parser) Parse(raw []byte) []sdk.Event {
	var l line
	if !agentkit.DecodeObject(raw, &l) {
		return append(p.flush(), agentkit.TextLine(raw)...)
	}
	if l.Type == "message" && l.Role == "assistant" {
		var delta string
		_ = json.Unmarshal(l.Content, &delta)
		p.text.WriteString(delta)
		return nil
	}
	evs := append(p.session.Event(l.SessionID), p.flush()...)
	switch l.Type {
	case "tool_use":
		if l.ToolName != "" {
			evs = append(evs, sdk.Event{Type: sdk.EventToolCall, ToolName: l.ToolName, ToolArg: agentkit.ToolArg(l.ToolName, l.Parameters)})
		}
	case "error":
		if l.Severity == "error" {
			p.errMsg = l.Message
			evs = append(evs, sdk.Event{Type: sdk.EventError, Text: l.Message})
		} else if l.Message != "" {
			evs = append(evs, sdk.Event{Type: sdk.EventWarning, Text: l.Message})
		}
	case "result":
		var s stats
		if agentkit.DecodeObject(l.Stats, &s) {
			u := s.usage()
			evs = append(evs, sdk.Event{Type: sdk.EventUsage, Usage: &u})
		}
		msg := apiError(agentkit.MessageText(l.Error))
		switch {
		case l.Status != "error" && msg == "":
			evs = append(evs, sdk.Event{Type: sdk.EventResult, Text: p.last})
		case msg == "" && p.errMsg == "":
			evs = append(evs, sdk.Event{Type: sdk.EventError, Text: "gemini: the turn ended in an error"})
		case msg != "" && msg != p.errMsg:
			// An error result after an error event repeats its message.
			evs = append(evs, sdk.Event{Type: sdk.EventError, Text: msg})
		}
	}
	return evs
}

// Close implements sdk.Parser: a stream cut mid-message still shows its
// text. The CLI reports usage only in its result line.
func (p *Parser) Close() []sdk.Event { return p.flush() }
