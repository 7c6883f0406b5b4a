package main

import (
	"regexp"
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for _, c := range []struct {
		name, stamped string
		info          *debug.BuildInfo
		want          string
	}{
		{"go install …@version", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"stamped by make wins", "v1.2.3-4-gabcdef1-dirty", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3-4-gabcdef1-dirty"},
		{"checkout stamped by the go command", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261127170050-44e48205dc88+dirty"}}, "v0.0.0-20261127170050-44e48205dc88+dirty"},
		{"devel with a revision", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("44e48205dc8899a7d5bfa9e9c5c6d06872f4f29c", "true")}, "(devel) 44e48205dc88-dirty"},
		{"devel, clean tree", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("44e48205dc8899a7d5bfa9e9c5c6d06872f4f29c", "false")}, "(devel) 44e48205dc88"},
		{"devel, no VCS", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "(devel)"},
		{"no build info", "", nil, "(devel)"},
	} {
		if got := versionOf(c.stamped, c.info); got != c.want {
			t.Errorf("%s: versionOf = %q, want %q", c.name, got, c.want)
		}
	}
}

// TestVersionCommand runs the built binary: one line naming its version
// and the plugin protocol versions it speaks, for `version` and
// `--version` alike.
func TestVersionCommand(t *testing.T) {
	line := regexp.MustCompile(`^sanddune (\(devel\)( [0-9a-f]{12}(-dirty)?)?|v\S+) \(plugin protocol 1\)\n$`)
	for _, arg := range []string{"version", "--version"} {
		r := run(t, t.TempDir(), arg)
		if r.code != 0 || !line.MatchString(r.stdout) {
			t.Fatalf("sanddune %s: exit %d\n%s%s", arg, r.code, r.stdout, r.stderr)
		}
	}
}
