package enginetest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/core/runlog"
	"github.com/missingstudio/sanddune/sdk"
)

// containersOf lists the containers of sanddune runs on repo (never other
// tests').
func containersOf(t *testing.T, repo string) []string {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+sdk.LabelRepo+"="+repo).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return strings.Fields(string(out))
}

func worktreeOptions(repo string, term *buffer) core.WorktreeOptions {
	return core.WorktreeOptions{Name: "life", Repo: repo,
		BranchStrategy: core.BranchStrategy{Type: core.StrategyBranch, Branch: "agent/life"},
		Logging:        core.Logging{Terminal: runlog.NewTerminal(term, term)}}
}

// TestCreateSandboxRunsReuseTheSandbox: two runs in one sandbox from
// core.CreateSandbox; the second finds what the first installed under the
// sandbox's home, outside the worktree, and continues its result's
// session options. Close (twice: idempotent) removes the container and
// the clean worktree, and reports every commit.
func TestCreateSandboxRunsReuseTheSandbox(t *testing.T) {
	ctx := context.Background()
	ref := dockerSandbox(t)
	repo := newRepo(t)
	var term buffer
	sb, err := core.CreateSandbox(ctx, core.CreateSandboxOptions{WorktreeOptions: worktreeOptions(repo, &term), SandboxOptions: core.SandboxOptions{Sandbox: ref}})
	if err != nil {
		t.Fatalf("CreateSandbox: %v\n%s", err, term.String())
	}
	defer sb.Close(ctx)
	wt := sb.Path()
	first, err := sb.Run(ctx, core.RunOptions{Agent: commandAgent(t, "cat > /dev/null; echo installed > $HOME/tool.txt; "+commitScript("one.txt")), Prompt: "install"})
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	second, err := sb.Run(ctx, core.RunOptions{Agent: commandAgent(t, "cat > /dev/null; cp $HOME/tool.txt seen.txt && git add seen.txt && git commit -qm seen"), Prompt: "use"})
	if err != nil {
		t.Fatalf("second run: %v", err)
	}
	if len(first.Commits) != 1 || len(second.Commits) != 1 || first.Branch != "agent/life" {
		t.Fatalf("each run reports its own commit: %v and %v on %s", shas(first), shas(second), first.Branch)
	}
	if first.Resume(false) != (core.ResumeOptions{}) {
		t.Errorf("the command agent reports no session, yet Resume = %+v", first.Resume(false))
	}
	res, err := sb.Close(ctx)
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	if again, err2 := sb.Close(ctx); again != res || err2 != nil {
		t.Errorf("a second Close returned %v, %v; want the first one's result", again, err2)
	}
	if got := git(t, repo, "show", "agent/life:seen.txt"); got != "installed" {
		t.Fatalf("the second run did not see what the first installed: seen.txt = %q", got)
	}
	if len(res.Commits) != 2 || len(res.Steps) != 2 {
		t.Fatalf("Close's result: %d commits, %d runs; want 2 and 2", len(res.Commits), len(res.Steps))
	}
	if c := containersOf(t, repo); len(c) != 0 {
		t.Errorf("containers left: %v", c)
	}
	if exists(wt) {
		t.Errorf("the clean worktree %s was not removed", wt)
	}
}

// TestWorktreeOutlivesItsSandbox: a sandbox from wt.CreateSandbox closes
// only the sandbox (the container is gone, the worktree stays, and a
// second sandbox can follow); wt.Close then keeps the dirty worktree and
// says where.
func TestWorktreeOutlivesItsSandbox(t *testing.T) {
	ctx := context.Background()
	ref := dockerSandbox(t)
	repo := newRepo(t)
	var term buffer
	wt, err := core.CreateWorktree(ctx, worktreeOptions(repo, &term))
	if err != nil {
		t.Fatalf("CreateWorktree: %v\n%s", err, term.String())
	}
	defer wt.Close(ctx)
	for i, file := range []string{"a.txt", "b.txt"} {
		sb, err := wt.CreateSandbox(ctx, core.SandboxOptions{Sandbox: ref})
		if err != nil {
			t.Fatalf("sandbox %d: %v", i+1, err)
		}
		if _, err := sb.Run(ctx, core.RunOptions{Agent: commandAgent(t, "cat > /dev/null; "+commitScript(file)), Prompt: "x"}); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if res, err := sb.Close(ctx); res != nil || err != nil {
			t.Fatalf("sandbox Close: %v, %v; want no worktree result and no error", res, err)
		}
		if c := containersOf(t, repo); len(c) != 0 {
			t.Fatalf("the sandbox's container is still there after its Close: %v", c)
		}
		if !exists(filepath.Join(wt.Path(), file)) {
			t.Fatalf("the worktree lost %s when its sandbox closed", file)
		}
	}
	write(t, filepath.Join(wt.Path(), "dirty.txt"), "uncommitted")
	res, err := wt.Close(ctx)
	if err != nil {
		t.Fatalf("worktree Close: %v", err)
	}
	if res.PreservedWorktreePath == "" || !exists(filepath.Join(res.PreservedWorktreePath, "dirty.txt")) {
		t.Fatalf("the dirty worktree is not preserved: %+v", res)
	}
	if len(res.Commits) != 2 {
		t.Fatalf("the worktree's commits: %v", shas(res))
	}
	t.Cleanup(func() {
		exec.Command("git", "-C", repo, "worktree", "remove", "--force", res.PreservedWorktreePath).Run()
	})
}

// TestCreateWorktreeRefusesHead: a worktree cannot be the host's working
// directory; the refusal comes before anything is created.
func TestCreateWorktreeRefusesHead(t *testing.T) {
	repo := newRepo(t)
	before := branches(t, repo)
	var term buffer
	for _, typ := range []core.StrategyType{core.StrategyHead, ""} {
		o := worktreeOptions(repo, &term)
		o.BranchStrategy = core.BranchStrategy{Type: typ}
		_, err := core.CreateWorktree(context.Background(), o)
		var re *core.RunError
		if !errors.As(err, &re) || re.Phase != core.PhaseConfig || !strings.Contains(err.Error(), "branch_strategy") {
			t.Fatalf("strategy %q: %v, want a config error at branch_strategy", typ, err)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, ".sanddune")); err == nil {
		t.Errorf("something was created in %s", repo)
	}
	if after := branches(t, repo); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("branches changed: %v -> %v", before, after)
	}
}
