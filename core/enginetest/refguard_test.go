package enginetest

import (
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/core"
)

// TestRefGuardWarnsAboutOtherBranches: in a bind-mount sandbox the agent
// can delete or move host branches that are not the run's; the run warns
// about each, with the command that restores it.
func TestRefGuardWarnsAboutOtherBranches(t *testing.T) {
	t.Parallel()
	sb := bwrapSandbox(t)
	repo := newRepo(t)
	head := git(t, repo, "rev-parse", "HEAD")
	git(t, repo, "branch", "precious")
	git(t, repo, "branch", "moved")
	git(t, repo, "tag", "v1")
	var term buffer
	o := options(repo, sb, commandAgent(t, commitScript("work.txt")+
		" && git branch -D precious && git update-ref refs/heads/moved HEAD && git tag -d v1"), &term)
	o.BranchStrategy = core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/guard"}
	res := run(t, o)
	out := term.String()
	for _, want := range []string{
		"branch precious was deleted while the sandbox ran", "`git branch -f precious " + head + "` restores it",
		"branch moved moved from " + head + " to " + res.Commits[0].SHA, "`git branch -f moved " + head + "` puts it back",
		"tag v1 was deleted", "`git tag -f v1 " + head + "`",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "agent/guard moved") || strings.Contains(out, "branch main") {
		t.Errorf("the run's own branch or the host branch was reported:\n%s", out)
	}
}
