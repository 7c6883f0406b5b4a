package agentkit

import (
	"strconv"
	"strings"
	"unicode/utf16"
)

// claudeMaxDir is where Claude Code cuts an encoded project directory.
const claudeMaxDir = 200

// EncodeClaudeCwd is Claude Code's project directory name for a cwd, for
// the sdk.CwdEncoder of the claude plugin
// (2.1.x): every UTF-16 code unit that is not [A-Za-z0-9] becomes '-'; a
// name longer than 200 units is cut to 200 and gets "-" plus the base-36
// absolute value of the path's 32-bit Java-style string hash.
func EncodeClaudeCwd(path string) string {
	units := utf16.Encode([]rune(path))
	var b strings.Builder
	for _, u := range units {
		if u < 128 && isAlnum(byte(u)) {
			b.WriteByte(byte(u))
		} else {
			b.WriteByte('-')
		}
	}
	s := b.String() // ASCII only: one byte per UTF-16 unit
	if len(s) <= claudeMaxDir {
		return s
	}
	var h int32
	for _, u := range units {
		h = (h << 5) - h + int32(u)
	}
	abs := int64(h)
	if abs < 0 {
		abs = -abs
	}
	return s[:claudeMaxDir] + "-" + strconv.FormatInt(abs, 36)
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// EncodePiCwd is pi's session directory name for a cwd (0.73.x), for the
// sdk.CwdEncoder of the pi plugin: one
// leading '/' or '\' is dropped, every '/', '\' and ':' becomes '-', and
// the result is wrapped in "--".
func EncodePiCwd(path string) string {
	p := strings.TrimPrefix(path, "/")
	if p == path {
		p = strings.TrimPrefix(path, `\`)
	}
	p = strings.NewReplacer("/", "-", `\`, "-", ":", "-").Replace(p)
	return "--" + p + "--"
}
