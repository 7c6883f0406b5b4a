package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSweepLocksRemovesOnlyStaleOnes(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	stale := writeStaleLock(t, r, "branch dead")
	live, err := r.Lock("branch live", "live-run")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release()

	got, err := r.SweepLocks(true)
	if err != nil || len(got) != 1 || got[0].Path != stale || got[0].Action != "would remove" || got[0].Info.Run != "ghost" {
		t.Fatalf("dry run: %+v, %v", got, err)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("dry run removed the lock: %v", err)
	}
	if h, err := r.Holder("branch dead"); h != nil || err != nil {
		t.Errorf("Holder of a stale lock: %+v, %v", h, err)
	}
	if h, err := r.Holder("branch live"); err != nil || h == nil || h.Run != "live-run" {
		t.Errorf("Holder of a live lock: %+v, %v", h, err)
	}

	got, err = r.SweepLocks(false)
	if err != nil || len(got) != 1 || got[0].Action != "removed" {
		t.Fatalf("sweep: %+v, %v", got, err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale lock left: %v", err)
	}
	if _, err := os.Stat(live.f.Name()); err != nil {
		t.Errorf("live lock removed: %v", err)
	}
}

func TestSweepBranchesDeletesOnlyEmptyTempBranches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRepo(t)
	base := git(t, r.Root, "rev-parse", "HEAD")
	const stamp = "/20260101-000000-abcdef"
	for _, b := range []string{"empty", "locked", "kept", "checkedout"} {
		git(t, r.Root, "branch", "sanddune/"+b+stamp, base)
	}
	writeStaleLock(t, r, "branch sanddune/empty"+stamp)
	live, err := r.Lock("branch sanddune/locked"+stamp, "live-run")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release()
	git(t, r.Root, "worktree", "add", "--quiet", filepath.Join(t.TempDir(), "wt"), "sanddune/checkedout"+stamp)
	git(t, r.Root, "switch", "--quiet", "-c", "sanddune/work"+stamp)
	commitFile(t, r.Root, "w.txt", "w\n", "unmerged work")
	git(t, r.Root, "switch", "--quiet", "main")
	git(t, r.Root, "branch", "sanddune/rescue/x"+stamp, base) // not a temp branch
	keep := map[string]string{"sanddune/kept" + stamp: "its run's sandbox is kept"}

	sweep := func(dryRun bool) map[string]string {
		t.Helper()
		got, err := r.SweepBranches(ctx, dryRun, keep)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, s := range got {
			m[strings.TrimSuffix(strings.TrimPrefix(s.Branch, "sanddune/"), stamp)] = s.Action
		}
		return m
	}
	check := func(got map[string]string, emptyAction string) {
		t.Helper()
		want := map[string]string{
			"empty": emptyAction, "locked": "kept (in use by run live-run", "kept": "kept (its run's sandbox is kept)",
			"checkedout": "kept (checked out in ", "work": "kept (holds commits no other branch has",
		}
		if len(got) != len(want) {
			t.Errorf("swept %v, want %d temp branches", got, len(want))
		}
		for b, w := range want {
			if !strings.HasPrefix(got[b], w) {
				t.Errorf("%s: %q, want %q...", b, got[b], w)
			}
		}
	}
	check(sweep(true), "would delete")
	git(t, r.Root, "rev-parse", "--verify", "sanddune/empty"+stamp)
	check(sweep(false), "deleted")
	if _, err := Git(ctx, r.Root, "rev-parse", "--verify", "--quiet", "refs/heads/sanddune/empty"+stamp); err == nil {
		t.Error("the empty temp branch is still there")
	}
	for _, b := range []string{"locked", "kept", "checkedout", "work", "rescue/x"} {
		git(t, r.Root, "rev-parse", "--verify", "refs/heads/sanddune/"+b+stamp)
	}
}

func TestSweepDryRunLeavesStaleLocks(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	dir := filepath.Join(r.StateDir("worktrees"), "x")
	git(t, r.Root, "worktree", "add", "--quiet", "--detach", dir)
	lock := writeStaleLock(t, r, "worktree "+dir)
	got, err := r.Sweep(context.Background(), true)
	if err != nil || len(got) != 1 || got[0].Action != "would remove" {
		t.Fatalf("dry run: %+v, %v", got, err)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("dry run broke the stale lock: %v", err)
	}
}
