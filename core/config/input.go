package config

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"

	"github.com/missingstudio/sanddune/core/internal/textfile"
)

// Input limits: what a config file, a --var value or a prompt may be
// before sanddune refuses it with a diagnostic instead of parsing it.
const (
	// MaxConfigSize bounds a config file.
	MaxConfigSize = 1 << 20
	// MaxNesting bounds how deep brackets, parentheses, braces, strings
	// and template interpolations nest (the parser recurses on each).
	MaxNesting = 200
	// MaxShownDiagnostics is how many diagnostics WriteDiagnostics renders.
	MaxShownDiagnostics = 20
)

// ReadSource reads the config file at path: a regular file of at most
// MaxConfigSize bytes that CheckSource accepts.
func ReadSource(path string) ([]byte, hcl.Diagnostics) {
	src, err := textfile.Read(path, MaxConfigSize)
	if err != nil {
		summary := "Unreadable config file"
		if os.IsNotExist(err) {
			summary = "Config file not found"
		}
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: summary, Detail: err.Error()}}
	}
	return src, CheckSource(src, path)
}

// CheckSource refuses input that is not text (invalid UTF-8, NUL or other
// control bytes: binary garbage) or that nests deeper than MaxNesting,
// before a parser sees it.
func CheckSource(src []byte, filename string) hcl.Diagnostics {
	pos := hcl.InitialPos
	for i := 0; i < len(src); {
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size <= 1 || r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f {
			end := pos
			end.Byte, end.Column = pos.Byte+1, pos.Column+1
			return hcl.Diagnostics{{
				Severity: hcl.DiagError,
				Summary:  "Not a text file",
				Detail:   fmt.Sprintf("%s holds the byte 0x%02x at line %d, column %d: config must be UTF-8 text without control characters.", filename, src[i], pos.Line, pos.Column),
				Subject:  &hcl.Range{Filename: filename, Start: pos, End: end},
			}}
		}
		pos = advance(pos, r, size)
		i += size
	}
	if at, deep := tooDeep(src); deep {
		p := posAt(src, at)
		end := p
		end.Byte, end.Column = p.Byte+1, p.Column+1
		return hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Nested too deeply",
			Detail:   fmt.Sprintf("Brackets, braces, strings and ${...} interpolations nest more than %d levels deep here.", MaxNesting),
			Subject:  &hcl.Range{Filename: filename, Start: p, End: end},
		}}
	}
	return nil
}

func advance(p hcl.Pos, r rune, size int) hcl.Pos {
	p.Byte += size
	if r == '\n' {
		p.Line++
		p.Column = 1
	} else {
		p.Column++
	}
	return p
}

func posAt(src []byte, at int) hcl.Pos {
	p := hcl.InitialPos
	for i := 0; i < at; {
		r, size := utf8.DecodeRune(src[i:])
		p = advance(p, r, size)
		i += size
	}
	return p
}

// Frames of the nesting scanner.
const (
	frameCode    = iota // inside ( [ {
	frameInterp         // inside ${ } or %{ } of a template
	frameString         // inside "..."
	frameHeredoc        // inside <<EOF ... EOF
)

type frame struct {
	kind   int
	marker string // heredoc end marker
}

// tooDeep scans HCL native or JSON syntax for nesting beyond MaxNesting
// and returns the offset where it goes too deep. It follows strings,
// heredocs, template interpolations and comments well enough to count
// what the parser would recurse on; the parser reports syntax errors.
func tooDeep(src []byte) (int, bool) {
	var stack []frame
	top := func() int {
		if len(stack) == 0 {
			return frameCode
		}
		return stack[len(stack)-1].kind
	}
	push := func(f frame) bool {
		stack = append(stack, f)
		return len(stack) > MaxNesting
	}
	pop := func(kinds ...int) {
		if len(stack) > 0 {
			for _, k := range kinds {
				if stack[len(stack)-1].kind == k {
					stack = stack[:len(stack)-1]
					return
				}
			}
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		rest := src[i:]
		switch top() {
		case frameString:
			switch {
			case c == '\\':
				i++
			case c == '"' || c == '\n':
				pop(frameString)
			default:
				n, interp := templateSeq(rest)
				i += max(n-1, 0)
				if interp && push(frame{kind: frameInterp}) {
					return i, true
				}
			}
		case frameHeredoc:
			if i == 0 || src[i-1] == '\n' {
				line, _, _ := bytes.Cut(rest, []byte("\n"))
				if strings.TrimSpace(string(line)) == stack[len(stack)-1].marker {
					pop(frameHeredoc)
					i += len(line) - 1
					continue
				}
			}
			n, interp := templateSeq(rest)
			i += max(n-1, 0)
			if interp && push(frame{kind: frameInterp}) {
				return i, true
			}
		default:
			switch {
			case c == '"':
				if push(frame{kind: frameString}) {
					return i, true
				}
			case c == '(' || c == '[' || c == '{':
				if push(frame{kind: frameCode}) {
					return i, true
				}
			case c == ')' || c == ']':
				pop(frameCode)
			case c == '}':
				pop(frameCode, frameInterp)
			case c == '#' || hasPrefix(rest, "//"):
				for i < len(src) && src[i] != '\n' {
					i++
				}
				i--
			case hasPrefix(rest, "/*"):
				j := bytes.Index(src[i+2:], []byte("*/"))
				if j < 0 {
					return 0, false
				}
				i += j + 3
			case hasPrefix(rest, "<<"):
				if marker, n := heredocStart(rest); n > 0 {
					i += n - 1
					if push(frame{kind: frameHeredoc, marker: marker}) {
						return i, true
					}
				}
			}
		}
	}
	return 0, false
}

// heredocStart parses `<<ID\n` or `<<-ID\n` at the start of b, returning
// the marker and the length through the newline.
func heredocStart(b []byte) (string, int) {
	i := 2
	if i < len(b) && b[i] == '-' {
		i++
	}
	start := i
	for i < len(b) && (b[i] == '_' || b[i] == '-' || b[i] >= 'a' && b[i] <= 'z' || b[i] >= 'A' && b[i] <= 'Z' || b[i] >= '0' && b[i] <= '9') {
		i++
	}
	if i == start {
		return "", 0
	}
	marker := string(b[start:i])
	if i < len(b) && b[i] == '\r' {
		i++
	}
	if i >= len(b) || b[i] != '\n' {
		return "", 0
	}
	return marker, i + 1
}

// templateSeq reads template text at the start of b: an escaped "$${" or
// "%%{" (3 bytes, literal), an interpolation "${" or "%{" (2 bytes), or
// anything else (0).
func templateSeq(b []byte) (n int, interp bool) {
	switch {
	case hasPrefix(b, "$${") || hasPrefix(b, "%%{"):
		return 3, false
	case hasPrefix(b, "${") || hasPrefix(b, "%{"):
		return 2, true
	}
	return 0, false
}

func hasPrefix(b []byte, s string) bool { return bytes.HasPrefix(b, []byte(s)) }
