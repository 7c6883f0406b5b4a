package enginetest

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/core"
)

// agentCommits is an agent making two commits, printing their SHAs and
// the completion signal.
const agentCommits = "echo a > a.txt && git add a.txt && git commit -q -m 'add a' && " +
	"echo b > b.txt && git add b.txt && git commit -q -m 'add b' && " +
	"git rev-list --reverse HEAD~2..HEAD | sed 's/^/SHA /' && echo '" + signal + "'"

// printedSHAs reads the "SHA <sha>" lines of the agent's output.
func printedSHAs(stdout string) []string {
	var out []string
	for _, l := range strings.Split(stdout, "\n") {
		if s, ok := strings.CutPrefix(l, "SHA "); ok {
			out = append(out, s)
		}
	}
	return out
}

func TestStrategies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		sandbox  func(testing.TB) core.SandboxRef
		strategy core.BranchStrategy
	}{
		{"BranchLocal", localSandbox, core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/work"}},
		{"MergeToHeadLocal", localSandbox, core.BranchStrategy{}}, // isolated default
		{"HeadBubblewrap", bwrapSandbox, core.BranchStrategy{}},   // bind-mount default
		{"MergeToHeadBubblewrap", bwrapSandbox, core.BranchStrategy{Type: core.StrategyMergeToHead}},
		{"BranchBubblewrap", bwrapSandbox, core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/work"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb := c.sandbox(t)
			repo := newRepo(t)
			base := git(t, repo, "rev-parse", "HEAD")
			var term buffer
			o := options(repo, sb, commandAgent(t, agentCommits), &term)
			o.BranchStrategy = c.strategy
			res := run(t, o)

			want := printedSHAs(res.Stdout)
			if len(want) != 2 {
				t.Fatalf("agent printed %d SHAs; stdout:\n%s", len(want), res.Stdout)
			}
			// The very commits the agent made (same SHAs) are reported
			// and on the result's branch.
			if got := shas(res); !slices.Equal(got, want) {
				t.Errorf("Result.Commits = %v; the agent made %v", got, want)
			}
			wantBranch := "main"
			if c.strategy.Type == core.StrategyBranch {
				wantBranch = c.strategy.Branch
			}
			if res.Branch != wantBranch {
				t.Errorf("Result.Branch = %q, want %q", res.Branch, wantBranch)
			}
			if got := revList(t, repo, base+".."+wantBranch); !slices.Equal(got, want) {
				t.Errorf("%s has %v since the base; want the agent's %v", wantBranch, got, want)
			}
			if res.CompletionSignal != signal || len(res.Iterations) != 1 {
				t.Errorf("signal %q after %d iterations", res.CompletionSignal, len(res.Iterations))
			}
			if cur := git(t, repo, "branch", "--show-current"); cur != "main" {
				t.Errorf("host checkout moved to %q", cur)
			}
			if c.strategy.Type != core.StrategyBranch {
				// The host worktree follows its branch.
				if !exists(filepath.Join(repo, "a.txt")) || !exists(filepath.Join(repo, "b.txt")) {
					t.Errorf("the agent's files are not in the host checkout")
				}
			}
			assertClean(t, repo)
			for _, b := range branches(t, repo) {
				if strings.HasPrefix(b, "sanddune/") {
					t.Errorf("temporary branch %s left behind", b)
				}
			}
			if res.PreservedWorktreePath != "" || res.PatchPath != "" {
				t.Errorf("nothing to preserve, got worktree %q patch %q", res.PreservedWorktreePath, res.PatchPath)
			}
			if wts := git(t, repo, "worktree", "list", "--porcelain"); strings.Count(wts, "worktree ") != 1 {
				t.Errorf("worktrees left behind:\n%s", wts)
			}
		})
	}
}

// TestHeadRejectedForIsolated: a strategy the provider cannot honour is a
// configuration error raised before anything starts.
func TestHeadRejectedForIsolated(t *testing.T) {
	t.Parallel()
	repo := newRepo(t)
	var term buffer
	o := options(repo, localSandbox(t), commandAgent(t, "true"), &term)
	o.BranchStrategy = core.BranchStrategy{Type: core.StrategyHead}
	_, err := core.Run(t.Context(), o)
	if exitCode(err) != exitConfig {
		t.Fatalf("err = %v (exit %d), want a configuration error", err, exitCode(err))
	}
	if exists(filepath.Join(repo, ".sanddune")) {
		t.Errorf(".sanddune created by a run rejected before it started")
	}
}

// TestExistingBranchSaidFirst: a run on a branch an earlier run left says
// so in its first lines, with the tip it continues from.
func TestExistingBranchSaidFirst(t *testing.T) {
	repo := newRepo(t)
	sb := localSandbox(t)
	var term buffer
	o := options(repo, sb, commandAgent(t, commitScript("one.txt")+" && exit 1"), &term)
	o.BranchStrategy = core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/left"}
	if _, err := core.Run(t.Context(), o); err == nil {
		t.Fatal("the failing run succeeded")
	}
	if strings.Contains(term.String(), "already exists") {
		t.Fatalf("a new branch reported as existing:\n%s", term.String())
	}
	tip := git(t, repo, "rev-parse", "agent/left")
	var term2 buffer
	o2 := options(repo, sb, commandAgent(t, commitScript("two.txt")), &term2)
	o2.BranchStrategy = o.BranchStrategy
	res := run(t, o2)
	want := "warning: branch agent/left already exists (left by an earlier run?): the run continues from its tip " + tip[:12]
	if first := strings.SplitN(term2.String(), "\n", 4); len(res.Commits) != 1 || !strings.Contains(strings.Join(first, "\n"), want) {
		t.Fatalf("first lines lack %q:\n%s", want, term2.String())
	}
}

// TestHeadWarnsAboutUncommittedChanges: with the head strategy (the
// bind-mount default) the agent works in the user's own working tree; a
// tracked file changed there is said before the agent starts, since its
// commits may take the change along. A clean tree gets no such warning.
func TestHeadWarnsAboutUncommittedChanges(t *testing.T) {
	t.Parallel()
	sb := bwrapSandbox(t)
	for _, dirty := range []bool{true, false} {
		repo := newRepo(t)
		if dirty {
			write(t, filepath.Join(repo, "README"), "my edit\n")
		}
		var term buffer
		run(t, options(repo, sb, commandAgent(t, "echo '"+signal+"'"), &term))
		if got := strings.Contains(term.String(), "which has uncommitted changes"); got != dirty {
			t.Errorf("dirty %v: warned %v:\n%s", dirty, got, term.String())
		}
	}
}
