package agentexec

import (
	"bytes"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
)

// Ring keeps the last bytes written to it, in constant memory.
type Ring struct {
	buf  []byte
	pos  int // next write position
	full bool
}

// NewRing keeps the last size bytes.
func NewRing(size int) *Ring { return &Ring{buf: make([]byte, size)} }

func (r *Ring) Write(p []byte) {
	n := len(r.buf)
	if len(p) >= n {
		copy(r.buf, p[len(p)-n:])
		r.pos, r.full = 0, true
		return
	}
	c := copy(r.buf[r.pos:], p)
	if c < len(p) {
		copy(r.buf, p[c:])
		r.full = true
	}
	r.pos = (r.pos + len(p)) % n
	if r.pos == 0 && len(p) > 0 {
		r.full = true
	}
}

func (r *Ring) WriteString(s string) {
	n := len(r.buf)
	if len(s) >= n {
		s = s[len(s)-n:]
	}
	r.Write([]byte(s))
}

func (r *Ring) Bytes() []byte {
	if !r.full {
		return append([]byte(nil), r.buf[:r.pos]...)
	}
	out := make([]byte, 0, len(r.buf))
	out = append(out, r.buf[r.pos:]...)
	return append(out, r.buf[:r.pos]...)
}

func (r *Ring) String() string { return string(r.Bytes()) }

func (r *Ring) Len() int {
	if r.full {
		return len(r.buf)
	}
	return r.pos
}

// lastLines returns up to n non-empty lines from the end of s.
func lastLines(s string, n int) string {
	ls := strings.Split(s, "\n")
	var out []string
	for i := len(ls) - 1; i >= 0 && len(out) < n; i-- {
		if strings.TrimSpace(ls[i]) != "" {
			out = append(out, ls[i])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return strings.Join(out, "\n")
}

// matcher looks for completion signals in a stream of text, keeping only
// a window as long as the longest signal, so a signal split across text
// deltas still matches.
type matcher struct {
	signals []string
	found   []bool
	left    int // signals not found yet
	window  []byte
	keep    int
}

func newMatcher(signals []string) *matcher {
	m := &matcher{signals: signals, found: make([]bool, len(signals)), left: len(signals)}
	for _, s := range signals {
		m.keep = max(m.keep, len(s)-1)
	}
	return m
}

// feed adds text and reports whether it completed a signal not seen
// before.
func (m *matcher) feed(s string) bool {
	if m.left == 0 || s == "" {
		return false
	}
	m.window = append(m.window, s...)
	hit := false
	for i, sig := range m.signals {
		if !m.found[i] && bytes.Contains(m.window, []byte(sig)) {
			m.found[i], hit = true, true
			m.left--
		}
	}
	if len(m.window) > m.keep {
		m.window = append(m.window[:0], m.window[len(m.window)-m.keep:]...)
	}
	return hit
}

// matched is the signal to report: of those seen, the first in the list;
// "" when none was.
func (m *matcher) matched() string {
	for i, f := range m.found {
		if f {
			return m.signals[i]
		}
	}
	return ""
}

// joiner reassembles the pieces of stdout's lines (sdk.OutputLine.Partial:
// a line longer than sdk.MaxLineBytes arrives in pieces) and keeps a line's
// first max bytes, so memory stays bounded whatever the agent prints.
type joiner struct {
	max  int
	line []byte
	cut  bool
}

// add takes one piece; once the line's last piece arrives it returns the
// line and whether it was cut at max. A line that came whole is the
// piece's own text.
func (j *joiner) add(l sdk.OutputLine) (line []byte, truncated, ok bool) {
	text := l.Text
	if room := max(j.max-len(j.line), 0); len(text) > room {
		text, j.cut = text[:room], true
	}
	if !l.Partial && j.line == nil {
		truncated, j.cut = j.cut, false
		return text, truncated, true
	}
	j.line = append(j.line, text...)
	if l.Partial {
		return nil, false, false
	}
	line, truncated = j.line, j.cut
	j.line, j.cut = nil, false
	return line, truncated, true
}
