package pi

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// line is the part of a `--mode json` line the parser reads. Nested parts
// are decoded on their own, so that one field of an unexpected shape loses
// that field, not the line.
type line struct {
	Type     string          `json:"type"`
	ID       string          `json:"id"` // session header
	Event    json.RawMessage `json:"assistantMessageEvent"`
	ToolName string          `json:"toolName"`
	Args     json.RawMessage `json:"args"`
	Message  json.RawMessage `json:"message"`
	Messages json.RawMessage `json:"messages"`
	// auto_retry_start / auto_retry_end
	Attempt      int    `json:"attempt"`
	MaxAttempts  int    `json:"maxAttempts"`
	ErrorMessage string `json:"errorMessage"`
	Success      bool   `json:"success"`
	FinalError   string `json:"finalError"`
}

type message struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	Usage        json.RawMessage `json:"usage"`
	StopReason   string          `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
}

type usage struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cacheRead"`
	CacheWrite int64 `json:"cacheWrite"`
}

func (m message) text() string {
	var content []json.RawMessage
	_ = json.Unmarshal(m.Content, &content)
	var b strings.Builder
	for _, raw := range content {
		var c struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &c) == nil && c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func (m message) failed() bool { return m.StopReason == "error" || m.StopReason == "aborted" }

func (m message) errorText() string {
	if m.ErrorMessage != "" {
		return m.ErrorMessage
	}
	return "pi: assistant message " + m.StopReason
}

// Parser parses one iteration of `pi --mode json`.
//
// pi has no error event and exits 0 in json mode: a failed model call is an
// assistant message that stopped on error. pi may retry it: the failed
// message_end is followed by agent_end and then auto_retry_start. So a
// failure is held until a retry, a later good message or the end of the
// stream decides whether it was the iteration's error or a warning.
type Parser struct {
	usage   agentkit.UsageSum // over assistant message_end events
	ended   bool              // agent_end seen
	pending string            // the error of the last failed message, undecided
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
		var ev struct {
			Type  string `json:"type"`
			Delta string `json:"delta"`
		}
		if json.Unmarshal(l.Event, &ev) == nil && ev.Type == "text_delta" && ev.Delta != "" {
			return []sdk.Event{{Type: sdk.EventText, Text: ev.Delta}}
		}
	case "tool_execution_start":
		if l.ToolName != "" {
			return []sdk.Event{{Type: sdk.EventToolCall, ToolName: l.ToolName, ToolArg: agentkit.ToolArg(l.ToolName, l.Args)}}
		}
	case "message_end":
		var m message
		if json.Unmarshal(l.Message, &m) != nil || m.Role != "assistant" {
			return nil
		}
		var u usage
		if agentkit.DecodeObject(m.Usage, &u) {
			p.usage.Add(sdk.Usage{
				InputTokens:              u.Input,
				CacheCreationInputTokens: u.CacheWrite,
				CacheReadInputTokens:     u.CacheRead,
				OutputTokens:             u.Output,
			})
		}
		if m.failed() {
			p.pending = m.errorText()
		} else if p.pending != "" {
			w := p.pending
			p.pending = ""
			return []sdk.Event{{Type: sdk.EventWarning, Text: w}}
		}
	case "auto_retry_start":
		msg := l.ErrorMessage
		if msg == "" {
			msg = p.pending
		}
		p.pending = ""
		return []sdk.Event{{Type: sdk.EventWarning, Text: fmt.Sprintf("retrying (attempt %d of %d) after: %s", l.Attempt, l.MaxAttempts, msg)}}
	case "auto_retry_end":
		if l.Success {
			return nil
		}
		msg := l.FinalError
		if msg == "" {
			msg = p.pending
		}
		if msg == "" {
			msg = "pi: retries failed"
		}
		p.pending = ""
		return []sdk.Event{{Type: sdk.EventError, Text: msg}}
	case "agent_end":
		p.ended = true
		evs := p.usage.Events()
		var msgs []json.RawMessage
		_ = json.Unmarshal(l.Messages, &msgs)
		for i := len(msgs) - 1; i >= 0; i-- {
			var m message
			if json.Unmarshal(msgs[i], &m) == nil && m.Role == "assistant" {
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

// Close implements sdk.Parser: a stream cut before agent_end still reports
// its usage, and a failure no retry followed is the iteration's error.
func (p *Parser) Close() []sdk.Event {
	var evs []sdk.Event
	if !p.ended {
		evs = p.usage.Events()
	}
	if p.pending != "" {
		evs = append(evs, sdk.Event{Type: sdk.EventError, Text: p.pending})
	}
	return evs
}
