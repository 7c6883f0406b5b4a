package agentkit

import (
	"bytes"
	"encoding/json"
	"strings"
)

// rewriteJSONLCwd rewrites the cwd fields of a JSONL session file. In every
// line that is a JSON object, each field named by fields whose value is
// from, or a path below from, gets from replaced by to. A field is a dotted
// path from the line's root ("cwd", "payload.cwd"), or "**." and a key
// name for that key at any depth ("**.cwd"). A field holding an array of
// strings has each element rewritten.
//
// Only the rewritten values change: every other byte, including lines that
// are not JSON or are torn, is kept as is.
func rewriteJSONLCwd(data []byte, from, to string, fields ...string) []byte {
	from, to = trimSlash(from), trimSlash(to)
	if from == to || from == "" || len(fields) == 0 {
		return data
	}
	r := rewriter{from: from, to: to}
	for _, f := range fields {
		if k, ok := strings.CutPrefix(f, "**."); ok {
			r.deep = append(r.deep, k)
		} else {
			r.paths = append(r.paths, strings.Split(f, "."))
		}
	}
	var out bytes.Buffer
	out.Grow(len(data))
	for len(data) > 0 {
		line, rest, found := bytes.Cut(data, []byte{'\n'})
		out.Write(r.line(line))
		if found {
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

type rewriter struct {
	from, to string
	paths    [][]string
	deep     []string // keys rewritten at any depth
}

func (r rewriter) line(line []byte) []byte {
	t := bytes.TrimSpace(line)
	if len(t) == 0 || t[0] != '{' || !bytes.Contains(line, []byte(trimQuote(r.from))) && !bytes.Contains(line, []byte(`\/`)) && !bytes.Contains(line, []byte(`\u`)) {
		return line
	}
	for _, p := range r.paths {
		line = r.value(line, p, "")
	}
	for _, k := range r.deep {
		if bytes.Contains(line, []byte(`"`+k+`"`)) {
			line = r.value(line, nil, k)
		}
	}
	return line
}

// trimQuote is the JSON-escaped form of s without quotes, for a quick
// check that a line may hold it.
func trimQuote(s string) string {
	q := marshalString(s)
	return string(q[1 : len(q)-1])
}

// value rewrites inside one JSON value: along path when path is set, else
// every field named deep at any depth. It returns raw itself when nothing
// changed or raw is not valid JSON.
func (r rewriter) value(raw []byte, path []string, deep string) []byte {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return raw
	}
	delim, _ := tok.(json.Delim)
	if delim != '{' && (delim != '[' || deep == "") {
		return raw
	}
	type edit struct {
		start, end int
		repl       []byte
	}
	var edits []edit
	for dec.More() {
		key := ""
		if delim == '{' {
			k, err := dec.Token()
			if err != nil {
				return raw
			}
			key, _ = k.(string)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return raw
		}
		end := int(dec.InputOffset())
		repl := []byte(v)
		switch {
		case deep != "" && key == deep:
			repl = r.strings(v)
		case deep != "":
			if len(v) > 0 && (v[0] == '{' || v[0] == '[') {
				repl = r.value(v, nil, deep)
			}
		case delim == '{' && key == path[0]:
			if len(path) == 1 {
				repl = r.strings(v)
			} else {
				repl = r.value(v, path[1:], "")
			}
		}
		if !bytes.Equal(repl, v) {
			edits = append(edits, edit{end - len(v), end, repl})
		}
	}
	if len(edits) == 0 {
		return raw
	}
	var out []byte
	last := 0
	for _, e := range edits {
		out = append(append(out, raw[last:e.start]...), e.repl...)
		last = e.end
	}
	return append(out, raw[last:]...)
}

// strings rewrites a string value, or each string of an array.
func (r rewriter) strings(raw []byte) []byte {
	if len(raw) > 0 && raw[0] == '[' {
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) != nil {
			return raw
		}
		changed := false
		for i, e := range elems {
			if n := r.string(e); !bytes.Equal(n, e) {
				elems[i], changed = n, true
			}
		}
		if !changed {
			return raw
		}
		return append(append([]byte{'['}, bytes.Join(bytesOf(elems), []byte{','})...), ']')
	}
	return r.string(raw)
}

func bytesOf(elems []json.RawMessage) [][]byte {
	out := make([][]byte, len(elems))
	for i, e := range elems {
		out[i] = e
	}
	return out
}

func (r rewriter) string(raw []byte) []byte {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return raw
	}
	switch {
	case s == r.from:
		s = r.to
	case strings.HasPrefix(s, r.from+"/"):
		s = r.to + s[len(r.from):]
	case r.from == "/" && strings.HasPrefix(s, "/"):
		s = r.to + s
	default:
		return raw
	}
	return marshalString(s)
}

// marshalString encodes s as a JSON string without HTML escaping.
func marshalString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
