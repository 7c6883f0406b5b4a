package env

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadFileNamesTheBadLine: a syntax error names the file and its
// line (after a quoted value spanning lines), a bad name names the name.
func TestReadFileNamesTheBadLine(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"GOOD=1\nthis line is bad\nK=\n", ".env:2: not a KEY=value line"},
		{"A=\"one\ntwo\"\nB=2\nnot a line\n", ".env:4: not a KEY=value line"},
		{"GOOD=1\n1BAD=x\n", `.env: invalid env: "1BAD" is not a variable name`},
	} {
		path := filepath.Join(t.TempDir(), ".env")
		if err := os.WriteFile(path, []byte(c.text), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := ReadFile(path)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.text, err, c.want)
		}
	}
}
