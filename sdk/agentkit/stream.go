package agentkit

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/missingstudio/sanddune/sdk"
)

// DecodeObject decodes line into v when the line is a JSON object. It
// reports false for anything else (plain text, torn or malformed JSON),
// which parsers pass through as a text event (see TextLine).
func DecodeObject(line []byte, v any) bool {
	t := bytes.TrimSpace(line)
	if len(t) < 2 || t[0] != '{' {
		return false
	}
	return json.Unmarshal(t, v) == nil
}

// TextLine is the event for a line that is not part of the JSON stream.
func TextLine(line []byte) []sdk.Event {
	return []sdk.Event{{Type: sdk.EventText, Text: string(line)}}
}

// maxToolArg caps ToolArg's result, in runes.
const maxToolArg = 200

// toolArgFields maps a lowercase tool name to the input fields that make a
// readable display argument, best first.
var toolArgFields = map[string][]string{
	"bash":       {"command", "cmd"},
	"shell":      {"command", "cmd"},
	"grep":       {"pattern"},
	"glob":       {"pattern"},
	"find":       {"pattern", "path"},
	"webfetch":   {"url"},
	"web_fetch":  {"url"},
	"websearch":  {"query"},
	"web_search": {"query"},
	"agent":      {"description", "prompt"},
	"task":       {"description", "prompt"},
}

// defaultArgFields are tried for any other tool (read, edit, write, ls...).
var defaultArgFields = []string{"command", "file_path", "filePath", "path", "notebook_path", "pattern", "url", "query", "description"}

// ToolArg returns a short readable argument for a tool call: the command of
// a shell tool, the path of a file tool, the url, query, pattern or
// description of the others. Tool names are matched case-insensitively
// (Claude's Bash, pi's bash and opencode's bash are alike). It returns ""
// when input has none of the known fields.
func ToolArg(tool string, input json.RawMessage) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(input, &fields) != nil {
		return ""
	}
	names, ok := toolArgFields[strings.ToLower(tool)]
	if !ok {
		names = defaultArgFields
	}
	for _, n := range names {
		var s string
		if raw, ok := fields[n]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
			return Short(s)
		}
	}
	return ""
}

// Short makes s fit on one display line (a tool call's argument): the first non-empty line, cut to
// maxToolArg runes, with "…" marking anything left out.
func Short(s string) string {
	s = strings.TrimSpace(s)
	cut := false
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s, cut = strings.TrimSpace(s[:i]), true
	}
	if utf8.RuneCountInString(s) > maxToolArg {
		s, cut = string([]rune(s)[:maxToolArg]), true
	}
	if cut {
		s += " …"
	}
	return s
}

// MessageText returns a JSON string, or the "message" string of a JSON
// object: the two shapes CLIs give an error. It returns "" for anything
// else.
func MessageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.Message
}

// SessionOnce reports a stream's session id once, for CLIs that repeat it
// on every line.
type SessionOnce struct{ seen bool }

// Event returns the session_id event for the first id that is not empty,
// and nothing after it.
func (s *SessionOnce) Event(id string) []sdk.Event {
	if id == "" || s.seen {
		return nil
	}
	s.seen = true
	return []sdk.Event{{Type: sdk.EventSessionID, SessionID: id}}
}

// UsageSum adds up token usage over a stream, for CLIs that report it per
// step or per message.
type UsageSum struct {
	total sdk.Usage
	seen  bool
}

// Add adds u to the sum.
func (s *UsageSum) Add(u sdk.Usage) {
	s.total, s.seen = s.total.Add(u), true
}

// Events returns the sum as a usage event, or nothing when nothing was
// added.
func (s *UsageSum) Events() []sdk.Event {
	if !s.seen {
		return nil
	}
	u := s.total
	return []sdk.Event{{Type: sdk.EventUsage, Usage: &u}}
}
