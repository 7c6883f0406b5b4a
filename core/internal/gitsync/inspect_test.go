package gitsync

import (
	"path/filepath"
	"testing"

	"github.com/missingstudio/sanddune/core/worktree"
)

func TestInspectFakeReportsUnsyncedWorkAndChangesNothing(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	base := git(t, r.Root, "rev-parse", "main")

	// A sandbox the run never synced into, inside someone's repository:
	// Inspect must not look above RepoPath.
	empty := newFakeSandbox(t)
	git(t, empty.dir, "init", "--quiet")
	git(t, empty.dir, "commit", "--quiet", "--allow-empty", "-m", "outer")
	p, err := Inspect(ctx, empty, Spec{HostRepo: r.Root, Branch: "main", Base: base})
	if err != nil || p.Synced {
		t.Fatalf("unsynced sandbox: %+v, %v", p, err)
	}

	ws, sb, spec := prepare(t, r, worktree.Strategy{})
	p, err = Inspect(ctx, sb, spec)
	if err != nil || !p.Synced || p.Head != base || len(p.Commits) != 0 || p.Dirty {
		t.Fatalf("freshly synced sandbox: %+v, %v", p, err)
	}
	sb.sh(t, "echo c > c.txt && git add c.txt && git commit -qm 'agent: c' && echo d > d.txt && echo a2 >> a.txt")
	before := sb.sh(t, "git status --porcelain; ls -a \"$(git rev-parse --git-dir)\"")
	p, err = Inspect(ctx, sb, spec)
	if err != nil || !p.Synced || len(p.Commits) != 1 || p.Commits[0].Subject != "agent: c" || p.Head != p.Commits[0].SHA || !p.Dirty {
		t.Fatalf("sandbox with work: %+v, %v", p, err)
	}
	if after := sb.sh(t, "git status --porcelain; ls -a \"$(git rev-parse --git-dir)\""); after != before {
		t.Errorf("Inspect changed the sandbox:\n%s\nthen\n%s", before, after)
	}
	if tip := git(t, r.Root, "rev-parse", "refs/heads/"+ws.Branch); tip != base {
		t.Errorf("Inspect moved the host branch to %s", tip)
	}
	if _, err := worktree.Git(ctx, r.Root, "cat-file", "-e", p.Head); err == nil {
		t.Error("Inspect fetched the sandbox's commit into the host")
	}
	if patches, _ := filepath.Glob(filepath.Join(r.Root, ".sanddune", "patches", "*")); len(patches) != 0 {
		t.Errorf("Inspect wrote patches %v", patches)
	}
}
