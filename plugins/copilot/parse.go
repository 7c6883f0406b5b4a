package copilot

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// line is the part of a `copilot --output-format json` line the parser
// reads: an event of the CLI's session, or its closing result line.
type line struct {
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
	SessionID string          `json:"sessionId"`
	ExitCode  *int            `json:"exitCode"`
}

// data is the union of the event payloads the parser reads.
type data struct {
	// assistant.message
	Content          string          `json:"content"`
	ToolRequests     json.RawMessage `json:"toolRequests"`
	ParentToolCallID string          `json:"parentToolCallId"`
	// session.error, session.warning, session.info
	Message  string `json:"message"`
	InfoType string `json:"infoType"`
	// session.usage_record
	Usage json.RawMessage `json:"usage"`
	// model.call_failure: the provider's error body, as text
	ErrorMessage string `json:"errorMessage"`
}

type toolRequest struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// usage is one model call's normalized usage: input counts every prompt
// token, the cached ones included.
type usage struct {
	Input      int64 `json:"inputTokens"`
	Output     int64 `json:"outputTokens"`
	CacheRead  int64 `json:"cacheReadTokens"`
	CacheWrite int64 `json:"cacheWriteTokens"`
}

// Parser parses one iteration of `copilot --output-format json`, followed
// by the session.usage_record lines the print-mode wrapper adds.
type Parser struct {
	session agentkit.SessionOnce
	usage   agentkit.UsageSum
	// last is the last text of the main agent, the iteration's result.
	last     string
	hasLast  bool
	errorSet bool
	// failure is the provider's message of the last failed model call,
	// which the CLI's own error message leaves out.
	failure string
}

// NewParser returns a parser for one iteration.
func NewParser() *Parser { return &Parser{} }

// Parse implements sdk.Parser.
func (p *Parser) Parse(raw []byte) []sdk.Event {
	var l line
	if !agentkit.DecodeObject(raw, &l) {
		return agentkit.TextLine(raw)
	}
	var d data
	_ = json.Unmarshal(l.Data, &d)
	switch l.Type {
	case "assistant.message":
		return p.message(&d)
	case "model.call_failure":
		p.failure = providerMessage(d.ErrorMessage)
	case "session.error":
		p.errorSet = true
		msg := d.Message
		if msg == "" {
			msg = "copilot: session error"
		}
		if p.failure != "" && !strings.Contains(msg, p.failure) {
			msg += "\nProvider error: " + p.failure
		}
		return []sdk.Event{{Type: sdk.EventError, Text: msg}}
	case "session.warning":
		if d.Message != "" {
			return []sdk.Event{{Type: sdk.EventWarning, Text: d.Message}}
		}
	case "session.info":
		// The CLI retries a failed model call itself.
		if d.InfoType == "model_retry" && d.Message != "" {
			return []sdk.Event{{Type: sdk.EventWarning, Text: d.Message}}
		}
	case "session.usage_record":
		var u usage
		if !agentkit.DecodeObject(d.Usage, &u) {
			return nil
		}
		p.usage.Add(sdk.Usage{
			InputTokens:              max(0, u.Input-u.CacheRead-u.CacheWrite),
			CacheReadInputTokens:     u.CacheRead,
			CacheCreationInputTokens: u.CacheWrite,
			OutputTokens:             u.Output,
		})
		// The running total: the host keeps the last usage event.
		return p.usage.Events()
	case "result":
		evs := p.session.Event(l.SessionID)
		switch {
		case l.ExitCode != nil && *l.ExitCode != 0 && !p.errorSet:
			evs = append(evs, sdk.Event{Type: sdk.EventError, Text: fmt.Sprintf("copilot: the session ended with exit code %d", *l.ExitCode)})
		case p.hasLast && (l.ExitCode == nil || *l.ExitCode == 0):
			evs = append(evs, sdk.Event{Type: sdk.EventResult, Text: p.last})
		}
		return evs
	}
	return nil
}

// providerMessage is the message of a provider's error body (a JSON error
// object, or an OpenAI-style {"error": {...}}), or the body itself.
func providerMessage(body string) string {
	var wrapped struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal([]byte(body), &wrapped) == nil {
		if m := agentkit.MessageText(wrapped.Error); m != "" {
			return m
		}
	}
	if m := agentkit.MessageText(json.RawMessage(body)); m != "" {
		return m
	}
	return body
}

// message reports an assistant message's text and tool calls. A
// subagent's text is not the agent's answer: it must not complete the run.
func (p *Parser) message(d *data) []sdk.Event {
	var evs []sdk.Event
	if d.Content != "" && d.ParentToolCallID == "" {
		evs = append(evs, sdk.Event{Type: sdk.EventText, Text: d.Content})
		p.last, p.hasLast = d.Content, true
	}
	var reqs []json.RawMessage
	_ = json.Unmarshal(d.ToolRequests, &reqs)
	for _, raw := range reqs {
		var r toolRequest
		if json.Unmarshal(raw, &r) == nil && r.Name != "" {
			evs = append(evs, sdk.Event{Type: sdk.EventToolCall, ToolName: r.Name, ToolArg: agentkit.ToolArg(r.Name, r.Arguments)})
		}
	}
	return evs
}

// Close implements sdk.Parser.
func (p *Parser) Close() []sdk.Event { return nil }
