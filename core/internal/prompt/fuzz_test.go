package prompt

import (
	"strings"
	"testing"
)

// FuzzParse: any template parses or fails with an error; its segments
// are exactly the text and the !`...` spans of the template; an argument
// value is data: filled in, it never becomes or changes a shell
// expression's command, and it reaches the shell only through the
// environment.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "{{X}}", "!`date`", "a !`echo {{X}}` b", "!``", "!`", "{{", "{{ X }}!`x`!`y`",
		"!`echo '{{X}}' \"{{X}}\" {{SOURCE_BRANCH}}`", "{{SOURCE_BRANCH}} !`git log {{TARGET_BRANCH}}..`", "!`a``b`", "{{Y}}"} {
		f.Add(s, "v !`rm -rf /` {{X}} '\"$(x)")
	}
	f.Fuzz(func(t *testing.T, text, value string) {
		tpl, err := parse("p.md", text, map[string]string{"X": value}, nil, []string{SourceBranch, TargetBranch})
		if err != nil {
			return
		}
		var rebuilt strings.Builder
		for _, s := range tpl.segs {
			if s.shell {
				rebuilt.WriteString("!`" + s.text + "`")
			} else {
				rebuilt.WriteString(s.text)
			}
		}
		if rebuilt.String() != text {
			t.Fatalf("segments %q do not rebuild the text %q", rebuilt.String(), text)
		}

		filled := tpl.Fill("src", "dst", nil)
		other := *tpl
		other.args = map[string]string{"X": "other"}
		plain := other.Fill("src", "dst", nil)
		if len(filled.parts) != len(plain.parts) {
			t.Fatalf("value %q changed the prompt's parts: %d, not %d", value, len(filled.parts), len(plain.parts))
		}
		for i, p := range filled.parts {
			if p.shell != plain.parts[i].shell || p.cmd != plain.parts[i].cmd || p.expr != plain.parts[i].expr {
				t.Fatalf("value %q changed shell expression %d: %q, not %q", value, i, p.cmd, plain.parts[i].cmd)
			}
			for k, v := range p.env {
				if !strings.HasPrefix(k, EnvPrefix) || v != value && v != "src" && v != "dst" {
					t.Fatalf("expression %q gets %s=%q", p.expr, k, v)
				}
			}
		}
	})
}
