package codex

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/agentkit"
)

// line is the part of a `--json` line the parser reads. Nested parts are
// decoded on their own, so that one field of an unexpected shape loses that
// field, not the line.
type line struct {
	Type     string          `json:"type"`
	ThreadID string          `json:"thread_id"`
	Message  json.RawMessage `json:"message"`
	Item     json.RawMessage `json:"item"`
	Usage    json.RawMessage `json:"usage"`
	Error    json.RawMessage `json:"error"`
	// Payload: a session rollout line (see ResumePrelude).
	Payload json.RawMessage `json:"payload"`
}

type item struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Command   json.RawMessage `json:"command"`
	Changes   json.RawMessage `json:"changes"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Query     string          `json:"query"`
	Message   string          `json:"message"`
}

type usage struct {
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
}

// tokenCount is the payload of a rollout's token_count line.
type tokenCount struct {
	Type string `json:"type"`
	Info struct {
		Total usage `json:"total_token_usage"`
	} `json:"info"`
}

// Parser parses one iteration of `codex exec --json`.
type Parser struct {
	shown map[string]bool // tool items already reported, by item id
	// last agent message: the iteration's result, as Codex has no result line.
	last       string
	hasLast    bool
	ended      bool   // turn.completed or turn.failed seen
	lastNotice string // last stream-level error notice
	// thread is the thread's usage before this turn: turn.completed
	// reports the running total of a resumed or forked thread.
	thread usage
}

// NewParser returns a parser for one iteration.
func NewParser() *Parser { return &Parser{shown: map[string]bool{}} }

// Parse implements sdk.Parser.
func (p *Parser) Parse(raw []byte) []sdk.Event {
	var l line
	if !agentkit.DecodeObject(raw, &l) {
		return agentkit.TextLine(raw)
	}
	switch l.Type {
	case "event_msg":
		// The resumed session's last token_count, printed by the resume
		// prelude: the thread's total so far.
		var tc tokenCount
		if agentkit.DecodeObject(l.Payload, &tc) && tc.Type == "token_count" {
			p.thread = tc.Info.Total
		}
	case "thread.started":
		if l.ThreadID != "" {
			return []sdk.Event{{Type: sdk.EventSessionID, SessionID: l.ThreadID}}
		}
	case "item.started", "item.updated", "item.completed":
		var it item
		if json.Unmarshal(l.Item, &it) == nil {
			return p.item(l.Type, &it)
		}
	case "turn.started":
		p.ended = false
	case "turn.completed":
		p.ended, p.lastNotice = true, ""
		var evs []sdk.Event
		var u usage
		if agentkit.DecodeObject(l.Usage, &u) {
			u, p.thread = u.since(p.thread), u
			// cached_input_tokens is a subset of input_tokens.
			evs = append(evs, sdk.Event{Type: sdk.EventUsage, Usage: &sdk.Usage{
				InputTokens:          u.InputTokens - u.CachedInputTokens,
				CacheReadInputTokens: u.CachedInputTokens,
				OutputTokens:         u.OutputTokens,
			}})
		}
		if p.hasLast {
			evs = append(evs, sdk.Event{Type: sdk.EventResult, Text: p.last})
			p.hasLast = false
		}
		return evs
	case "turn.failed":
		p.ended = true
		msg := agentkit.MessageText(l.Error)
		if msg == "" {
			msg = "codex: turn failed"
		}
		return []sdk.Event{{Type: sdk.EventError, Text: msg}}
	case "error":
		// Reconnect notices and other non-fatal stream errors are
		// warnings: only a turn that never ends makes the last one the
		// iteration's error.
		p.lastNotice = agentkit.MessageText(l.Message)
		if p.lastNotice != "" {
			return []sdk.Event{{Type: sdk.EventWarning, Text: p.lastNotice}}
		}
	}
	return nil
}

// since returns the usage added to the running total u since prev; u itself
// when the total did not grow from prev (a thread whose count was reset).
func (u usage) since(prev usage) usage {
	d := usage{u.InputTokens - prev.InputTokens, u.CachedInputTokens - prev.CachedInputTokens, u.OutputTokens - prev.OutputTokens}
	if d.InputTokens < 0 || d.CachedInputTokens < 0 || d.OutputTokens < 0 {
		return u
	}
	return d
}

func (p *Parser) item(event string, it *item) []sdk.Event {
	switch it.Type {
	case "error": // a non-fatal warning item
		if event != "item.completed" || it.Message == "" {
			return nil
		}
		return []sdk.Event{{Type: sdk.EventWarning, Text: it.Message}}
	case "agent_message":
		if event != "item.completed" {
			return nil
		}
		p.last, p.hasLast = it.Text, true
		return []sdk.Event{{Type: sdk.EventText, Text: it.Text}}
	case "command_execution", "file_change", "mcp_tool_call", "web_search":
		if p.shown[it.ID] && it.ID != "" {
			return nil
		}
		p.shown[it.ID] = true
		name, arg := toolCall(it)
		return []sdk.Event{{Type: sdk.EventToolCall, ToolName: name, ToolArg: arg}}
	}
	return nil
}

func toolCall(it *item) (name, arg string) {
	switch it.Type {
	case "command_execution":
		// A string, or an argv in some builds.
		var argv []string
		cmd := agentkit.MessageText(it.Command)
		if json.Unmarshal(it.Command, &argv) == nil {
			cmd = strings.Join(argv, " ")
		}
		return "Bash", agentkit.Short(unwrapShell(cmd))
	case "file_change":
		var paths []string
		var changes []json.RawMessage
		_ = json.Unmarshal(it.Changes, &changes)
		for _, raw := range changes {
			var c struct {
				Path string `json:"path"`
			}
			if json.Unmarshal(raw, &c) == nil && c.Path != "" {
				paths = append(paths, c.Path)
			}
		}
		return "Edit", agentkit.Short(strings.Join(paths, ", "))
	case "web_search":
		return "WebSearch", agentkit.Short(it.Query)
	}
	name = it.Tool
	if it.Server != "" {
		name = it.Server + "." + it.Tool
	}
	return name, agentkit.ToolArg(it.Tool, it.Arguments)
}

var shellWrap = regexp.MustCompile(`^(?:/usr)?(?:/bin/)?(?:ba|z)?sh -l?c (.+)$`)

// unwrapShell turns Codex's `/bin/bash -lc 'npm test'` into `npm test`.
func unwrapShell(cmd string) string {
	m := shellWrap.FindStringSubmatch(cmd)
	if m == nil {
		return cmd
	}
	s := m[1]
	switch {
	case len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'':
		return strings.ReplaceAll(s[1:len(s)-1], `'\''`, `'`)
	case len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"':
		return strings.ReplaceAll(s[1:len(s)-1], `\"`, `"`)
	}
	return s
}

// Close implements sdk.Parser: a stream that ends mid-turn reports its last
// error notice as the iteration's error, or else its last message as the
// result.
func (p *Parser) Close() []sdk.Event {
	switch {
	case p.ended:
		return nil
	case p.lastNotice != "":
		return []sdk.Event{{Type: sdk.EventError, Text: p.lastNotice}}
	case p.hasLast:
		return []sdk.Event{{Type: sdk.EventResult, Text: p.last}}
	}
	return nil
}
