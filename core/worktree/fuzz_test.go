package worktree

import (
	"os/exec"
	"strings"
	"testing"
)

// FuzzNames: the branch, copy path and run name checks never crash, and
// what they accept is safe to use: a branch name git itself accepts
// (git check-ref-format --branch), a copy path inside the repo and out of
// .git and the worktrees, a sanitized run name usable in a branch.
func FuzzNames(f *testing.F) {
	for _, s := range []string{"main", "agent/x", "../x", ".git/config", ".sanddune", ".sanddune/worktrees/a", "a//b", "-x",
		"x.lock", "@{u}", "", "a/.b", "a\x7fb", "é/ü", "refs/heads/x", "a..b", "HEAD", "@", "x.", "/a", "a/"} {
		f.Add(s)
	}
	git, gitErr := exec.LookPath("git")
	f.Fuzz(func(t *testing.T, s string) {
		if CheckBranchName(s) == nil {
			if gitErr != nil {
				t.Skip("git not found: cannot check accepted branch names against it")
			}
			if out, err := exec.Command(git, "check-ref-format", "--branch", s).CombinedOutput(); err != nil {
				t.Fatalf("CheckBranchName accepted %q, git refuses it: %s", s, out)
			}
		}
		if c, err := CheckRelPath(s); err == nil {
			if c == "." || c == ".." || strings.HasPrefix(c, "../") || strings.HasPrefix(c, "/") || c == ".git" ||
				strings.HasPrefix(c, ".git/") || HoldsWorktrees(c) {
				t.Fatalf("CheckRelPath(%q) accepted %q", s, c)
			}
		}
		if n := SanitizeName(s); CheckBranchName("sanddune/"+n) != nil && len(n) < MaxBranchName-len("sanddune/") {
			t.Fatalf("SanitizeName(%q) = %q, not a branch component: %v", s, n, CheckBranchName("sanddune/"+n))
		}
	})
}
