package session

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
)

// side is one end of a transfer: where {home} and {cwd} point.
type side struct {
	home, cwd string
}

// pattern is a storage pattern expanded for one side: literal text and
// wildcards ('*', within one path segment).
type pattern struct {
	parts []string // literal, wildcard, literal, ..., literal (odd length)
}

// expand substitutes the placeholders of s.PathPattern for one side; the
// agent spells {cwd_encoded} (sdk.CwdEncoder).
func expand(ctx context.Context, agent sdk.AgentProvider, s sdk.SessionStorage, sd side, id string) (pattern, error) {
	vals := map[string]string{"home": sd.home, "cwd": sd.cwd, "session_id": id}
	if strings.Contains(s.PathPattern, "{cwd_encoded}") {
		e, ok := agent.(sdk.CwdEncoder)
		if !ok {
			return pattern{}, fmt.Errorf("session path pattern %q: {cwd_encoded} needs an agent that implements sdk.CwdEncoder", s.PathPattern)
		}
		enc, err := e.EncodeCwd(ctx, sd.cwd)
		if err != nil {
			return pattern{}, fmt.Errorf("encoding %s for the session path: %w", sd.cwd, err)
		}
		if enc == "" || strings.Contains(enc, "/") {
			return pattern{}, fmt.Errorf("the agent encoded %s as %q for the session path: want one path segment", sd.cwd, enc)
		}
		vals["cwd_encoded"] = enc
	}
	var p pattern
	lit := ""
	rest := s.PathPattern
	for rest != "" {
		switch {
		case rest[0] == '*':
			p.parts = append(p.parts, lit)
			lit, rest = "", rest[1:]
		case rest[0] == '{':
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return pattern{}, fmt.Errorf("session path pattern %q: unclosed {", s.PathPattern)
			}
			v, ok := vals[rest[1:end]]
			if n, isPrefix := strings.CutPrefix(rest[1:end], "session_id:"); isPrefix {
				v, ok = idPrefix(id, n)
			}
			if !ok {
				return pattern{}, fmt.Errorf("session path pattern %q: unknown placeholder %s", s.PathPattern, rest[:end+1])
			}
			lit, rest = lit+v, rest[end+1:]
		default:
			n := strings.IndexAny(rest, "*{")
			if n < 0 {
				n = len(rest)
			}
			lit, rest = lit+rest[:n], rest[n:]
		}
	}
	p.parts = append(p.parts, lit)
	if !path.IsAbs(p.parts[0]) {
		return pattern{}, fmt.Errorf("session path %q is not absolute", p.String())
	}
	return p, nil
}

// idPrefix is {session_id:n}: the id's first n characters (the whole id
// when shorter), for a CLI that names a file after a prefix of the id.
func idPrefix(id, n string) (string, bool) {
	k, err := strconv.Atoi(n)
	if err != nil || k < 1 {
		return "", false
	}
	return id[:min(k, len(id))], true
}

// String shows the pattern with '*' for wildcards, for messages.
func (p pattern) String() string { return strings.Join(p.parts, "*") }

// glob is the pattern with glob metacharacters of its literals escaped, for
// filepath.Glob and find -path.
func (p pattern) glob() string {
	esc := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	var b strings.Builder
	for i, l := range p.parts {
		if i > 0 {
			b.WriteByte('*')
		}
		b.WriteString(esc.Replace(l))
	}
	return b.String()
}

// match reports whether name matches the pattern ('*' never crosses '/'),
// and what each wildcard matched.
func (p pattern) match(name string) ([]string, bool) {
	var b strings.Builder
	b.WriteByte('^')
	for i, l := range p.parts {
		if i > 0 {
			b.WriteString(`([^/]*)`)
		}
		b.WriteString(regexp.QuoteMeta(l))
	}
	b.WriteByte('$')
	m := regexp.MustCompile(b.String()).FindStringSubmatch(name)
	if m == nil {
		return nil, false
	}
	return m[1:], true
}

// fill replaces the wildcards with values (as returned by match).
func (p pattern) fill(values []string) (string, error) {
	if len(values) != len(p.parts)-1 {
		return "", fmt.Errorf("session path %q: %d wildcards, %d values", p, len(p.parts)-1, len(values))
	}
	var b strings.Builder
	for i, l := range p.parts {
		if i > 0 {
			if strings.Contains(values[i-1], "/") {
				return "", fmt.Errorf("session path %q: wildcard value %q holds a '/'", p, values[i-1])
			}
			b.WriteString(values[i-1])
		}
		b.WriteString(l)
	}
	return b.String(), nil
}

// root is the deepest directory without wildcards above every match.
func (p pattern) root() string {
	return path.Dir(p.parts[0] + "x") // the literal prefix's directory
}

// companionDir is the directory that belongs to a JSONL session file: its
// path without ".jsonl" (Claude keeps subagent transcripts there). Other
// files have none ("").
func companionDir(file string) string {
	if d, ok := strings.CutSuffix(file, ".jsonl"); ok {
		return d
	}
	return ""
}
