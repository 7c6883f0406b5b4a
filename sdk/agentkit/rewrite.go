package agentkit

import (
	"bytes"
	"encoding/json"
	"strings"
)

// RewriteJSONLCwd rewrites the cwd fields of a JSONL session file. In every
// line that is a JSON object, each string field at one of the dotted paths
// in fields (e.g. "cwd", "payload.cwd") whose value is from, or a path
// below from, gets from replaced by to. Only the rewritten values change:
// every other byte, including lines that are not JSON or are torn, is kept
// as is.
func RewriteJSONLCwd(data []byte, from, to string, fields ...string) []byte {
	from, to = trimSlash(from), trimSlash(to)
	if from == to || from == "" || len(fields) == 0 {
		return data
	}
	paths := make([][]string, len(fields))
	for i, f := range fields {
		paths[i] = strings.Split(f, ".")
	}
	var out bytes.Buffer
	out.Grow(len(data))
	for len(data) > 0 {
		line := data
		rest := []byte(nil)
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, rest = data[:i], data[i+1:]
		}
		for _, p := range paths {
			line = rewriteField(line, p, from, to)
		}
		out.Write(line)
		if rest != nil {
			out.WriteByte('\n')
		}
		data = rest
	}
	return out.Bytes()
}

func trimSlash(p string) string {
	if len(p) > 1 {
		return strings.TrimRight(p, "/")
	}
	return p
}

// rewriteField rewrites the string at path inside the JSON object obj and
// returns the (possibly new) object bytes.
func rewriteField(obj []byte, path []string, from, to string) []byte {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return obj
	}
	type edit struct {
		start, end int
		repl       []byte
	}
	var edits []edit
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return obj
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return obj
		}
		if k != path[0] {
			continue
		}
		end := int(dec.InputOffset())
		var repl []byte
		if len(path) > 1 {
			repl = rewriteField(raw, path[1:], from, to)
		} else {
			repl = rewriteString(raw, from, to)
		}
		if !bytes.Equal(repl, raw) {
			edits = append(edits, edit{end - len(raw), end, repl})
		}
	}
	if len(edits) == 0 {
		return obj
	}
	var out []byte
	last := 0
	for _, e := range edits {
		out = append(append(out, obj[last:e.start]...), e.repl...)
		last = e.end
	}
	return append(out, obj[last:]...)
}

func rewriteString(raw []byte, from, to string) []byte {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return raw
	}
	switch {
	case s == from:
		s = to
	case strings.HasPrefix(s, from+"/") || from == "/" && strings.HasPrefix(s, "/"):
		s = to + s[len(strings.TrimSuffix(from, "/")):]
	default:
		return raw
	}
	return MarshalString(s)
}

// MarshalString encodes s as a JSON string without HTML escaping.
func MarshalString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
