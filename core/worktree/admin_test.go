package worktree

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
)

// TestWorktreeMadeAsGitMakesIt: the worktree Prepare makes without `git
// worktree add` is one to git: listed with its branch, not prunable, its
// admin files as git's own `worktree add` writes them, usable, and
// removable by `git worktree remove`.
func TestWorktreeMadeAsGitMakesIt(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws := prepare(t, r, Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "fix-42")
	want := "worktree " + ws.Dir + "\x00HEAD " + ws.Base + "\x00branch refs/heads/" + ws.Branch
	if got := git(t, r.Root, "worktree", "list", "--porcelain", "-z"); !strings.Contains(got, want) {
		t.Fatalf("git worktree list:\n%q\nwants %q", got, want)
	}
	if got := git(t, r.Root, "worktree", "prune", "--dry-run", "--verbose"); got != "" {
		t.Fatalf("git would prune: %s", got)
	}
	byGit := filepath.Join(t.TempDir(), "by-git")
	git(t, r.Root, "worktree", "add", "--quiet", "-b", "by-git", byGit)
	ours, theirs := filepath.Join(r.CommonDir, "worktrees", filepath.Base(ws.Dir)), filepath.Join(r.CommonDir, "worktrees", "by-git")
	if names(t, ours) != names(t, theirs) {
		t.Fatalf("admin dir holds %s, git's %s", names(t, ours), names(t, theirs))
	}
	for _, f := range []struct{ ours, theirs string }{
		{filepath.Join(ws.Dir, ".git"), filepath.Join(byGit, ".git")},
		{filepath.Join(ours, "gitdir"), filepath.Join(theirs, "gitdir")},
		{filepath.Join(ours, "commondir"), filepath.Join(theirs, "commondir")},
		{filepath.Join(ours, "HEAD"), filepath.Join(theirs, "HEAD")},
	} {
		o := strings.NewReplacer(ws.Dir, "DIR", "worktrees/"+filepath.Base(ws.Dir), "worktrees/ID", "refs/heads/"+ws.Branch, "refs/heads/BRANCH").Replace(readFile(t, f.ours))
		g := strings.NewReplacer(byGit, "DIR", "worktrees/by-git", "worktrees/ID", "refs/heads/by-git", "refs/heads/BRANCH").Replace(readFile(t, f.theirs))
		if o != g {
			t.Fatalf("%s: %q, git writes %q", f.ours, o, g)
		}
	}
	if st := git(t, ws.Dir, "status", "--porcelain"); st != "" {
		t.Fatalf("fresh worktree not clean:\n%s", st)
	}
	if got := readFile(t, filepath.Join(ws.Dir, "a.txt")); got != "a\n" {
		t.Fatalf("a.txt %q", got)
	}
	git(t, r.Root, "fsck", "--no-progress")
	commitFile(t, ws.Dir, "b.txt", "b", "agent")
	git(t, r.Root, "worktree", "remove", ws.Dir)
	git(t, r.Root, "worktree", "remove", byGit)
	if _, err := os.Stat(ours); !os.IsNotExist(err) {
		t.Fatalf("git left the admin dir: %v", err)
	}
}

func names(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ns []string
	for _, e := range es {
		if e.Name() != "logs" && e.Name() != "ORIG_HEAD" { // git's reflog and reset's
			ns = append(ns, e.Name())
		}
	}
	return strings.Join(ns, ",")
}

// TestWorktreesReadAsGitListsThem: the worktree listing read from the
// admin files is git's: the main one first, branches, detached heads, a
// prunable one (its directory gone), a locked one.
func TestWorktreesReadAsGitListsThem(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	tmp := t.TempDir()
	git(t, r.Root, "worktree", "add", "--quiet", "-b", "b1", filepath.Join(tmp, "b1"))
	git(t, r.Root, "worktree", "add", "--quiet", "--detach", filepath.Join(tmp, "det"))
	git(t, r.Root, "worktree", "add", "--quiet", "-b", "gone", filepath.Join(tmp, "gone"))
	git(t, r.Root, "worktree", "add", "--quiet", "--lock", "-b", "locked", filepath.Join(tmp, "locked"))
	commitFile(t, filepath.Join(tmp, "b1"), "x", "x", "b1 moves")
	os.RemoveAll(filepath.Join(tmp, "gone"))
	os.RemoveAll(filepath.Join(tmp, "locked"))
	git(t, r.Root, "pack-refs", "--all") // tips from packed-refs too
	commitFile(t, r.Root, "y", "y", "main moves")
	got, err := r.readWorktrees()
	if err != nil {
		t.Fatal(err)
	}
	want := parseWorktrees(git(t, r.Root, "worktree", "list", "--porcelain", "-z"))
	key := func(e worktreeEntry) string { return e.Path }
	slices.SortFunc(got[1:], func(a, b worktreeEntry) int { return strings.Compare(key(a), key(b)) })
	slices.SortFunc(want[1:], func(a, b worktreeEntry) int { return strings.Compare(key(a), key(b)) })
	if !slices.Equal(got, want) {
		t.Fatalf("read:\n%+v\ngit lists:\n%+v", got, want)
	}
	if len(got) != 5 || !got[3].Prunable || got[4].Prunable {
		t.Fatalf("want gone prunable and locked not: %+v", got)
	}
}

// TestRefsReadAsGitReadsThem: branches and tags read from the files are
// for-each-ref's: loose, packed, a loose one newer than its packed line,
// annotated tags, a symbolic ref, nested names; a missing branch is not
// found; and a reftable repository is asked of git.
func TestRefsReadAsGitReadsThem(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	git(t, r.Root, "branch", "agent/x")
	git(t, r.Root, "tag", "light")
	git(t, r.Root, "tag", "-a", "-m", "annotated", "ann")
	git(t, r.Root, "pack-refs", "--all")
	moved := commitFile(t, r.Root, "m", "m", "main moves after the pack") // loose beats packed
	git(t, r.Root, "branch", "agent/y/z")
	git(t, r.Root, "tag", "-a", "-m", "loose annotated", "ann2")
	git(t, r.Root, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
	forEachRef := func() map[string]string {
		refs := map[string]string{}
		for _, l := range strings.Split(git(t, r.Root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads", "refs/tags"), "\n") {
			n, s, _ := strings.Cut(l, " ")
			refs[n] = s
		}
		return refs
	}
	want := forEachRef()
	got, err := r.readRefs("refs/heads", "refs/tags")
	if err != nil || !equalMaps(got, want) {
		t.Fatalf("read %v (%v), git: %v", got, err, want)
	}
	if tip, err := r.Tip(ctx, "main"); tip != moved || err != nil {
		t.Fatalf("tip main %q %v, want %s", tip, err, moved)
	}
	if ok, err := r.branchExists(ctx, "agent"); ok || err != nil { // a directory of branches, no branch
		t.Fatalf("branchExists(agent) %v %v", ok, err)
	}
	if ok, err := r.branchExists(ctx, "agent/x"); !ok || err != nil {
		t.Fatalf("branchExists(agent/x) %v %v", ok, err)
	}
	if _, err := r.Tip(ctx, "nope"); err == nil {
		t.Fatal("tip of a missing branch")
	}
	// git 2.39 keeps using the files beside a reftable dir; what matters
	// is that Refs then asks git, and gets the same.
	os.Mkdir(filepath.Join(r.CommonDir, "reftable"), 0o755)
	if _, err := r.readRefs("refs/heads"); err != errAskGit {
		t.Fatalf("reftable: %v", err)
	}
	if got, err := r.Refs(ctx); err != nil || !equalMaps(got, want) {
		t.Fatalf("asked of git: %v %v", got, err)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestCloseLeavesWhatGitWouldRefuse: a clean worktree git would not remove
// without --force is preserved with git's reason: locked, or holding a
// submodule (whose history would go with it).
func TestCloseLeavesWhatGitWouldRefuse(t *testing.T) {
	t.Parallel()
	t.Run("locked", func(t *testing.T) {
		r := newRepo(t)
		ws := prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractBindMount, "r1")
		git(t, r.Root, "worktree", "lock", ws.Dir)
		closed, err := ws.Close(ctx)
		if closed.PreservedPath != ws.Dir || err == nil || !strings.Contains(err.Error(), "locked") {
			t.Fatalf("close %+v %v", closed, err)
		}
	})
	t.Run("submodule", func(t *testing.T) {
		r := newRepo(t)
		sub := newRepo(t)
		ws := prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractBindMount, "r1")
		git(t, ws.Dir, "-c", "protocol.file.allow=always", "submodule", "--quiet", "add", sub.Root, "sub")
		git(t, ws.Dir, "commit", "--quiet", "-m", "add sub")
		subTip := commitFile(t, filepath.Join(ws.Dir, "sub"), "s", "s", "only in the submodule")
		git(t, ws.Dir, "add", "sub")
		git(t, ws.Dir, "commit", "--quiet", "-m", "move sub")
		closed, err := ws.Close(ctx)
		if closed.PreservedPath != ws.Dir || err == nil || !strings.Contains(err.Error(), "submodules") {
			t.Fatalf("close %+v %v", closed, err)
		}
		if got := git(t, filepath.Join(ws.Dir, "sub"), "rev-parse", "HEAD"); got != subTip {
			t.Fatalf("submodule at %s, want %s", got, subTip)
		}
	})
	t.Run(".git naming another worktree", func(t *testing.T) { // as a sandbox may write it
		r := newRepo(t)
		other := filepath.Join(t.TempDir(), "other")
		git(t, r.Root, "worktree", "add", "--quiet", "-b", "other", other)
		ws := prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractBindMount, "r1")
		writeFile(t, filepath.Join(ws.Dir, ".git"), "gitdir: "+filepath.Join(r.CommonDir, "worktrees", "other")+"\n")
		closed, err := ws.Close(ctx)
		if closed.PreservedPath != ws.Dir || err == nil {
			t.Fatalf("close %+v %v", closed, err)
		}
		if st := git(t, other, "status", "--porcelain"); st != "" {
			t.Fatalf("the other worktree: %s", st)
		}
	})
	t.Run("embedded repository", func(t *testing.T) { // its .git inside the worktree
		r := newRepo(t)
		ws := prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractBindMount, "r1")
		emb := filepath.Join(ws.Dir, "emb")
		git(t, ws.Dir, "init", "--quiet", "emb")
		tip := commitFile(t, emb, "e", "e", "only in the embedded repository")
		git(t, ws.Dir, "add", "emb")
		git(t, ws.Dir, "commit", "--quiet", "-m", "add emb")
		closed, err := ws.Close(ctx)
		if closed.PreservedPath != ws.Dir || err == nil || !strings.Contains(err.Error(), "submodules") {
			t.Fatalf("close %+v %v", closed, err)
		}
		if got := git(t, emb, "rev-parse", "HEAD"); got != tip {
			t.Fatalf("embedded repository at %s, want %s", got, tip)
		}
	})
}

// TestParallelBranchRunsShareTheAdminFiles: runs of distinct branches
// made and removed at once leave git a consistent list the whole time and
// nothing at the end.
func TestParallelBranchRunsShareTheAdminFiles(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	stop := make(chan struct{})
	listed := make(chan error, 1)
	go func() { // git reading the admin files meanwhile
		defer close(listed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := Git(ctx, r.Root, "worktree", "list", "--porcelain"); err != nil {
				listed <- err
				return
			}
		}
	}()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws, err := tryPrepare(r, Strategy{Type: StrategyBranch, Branch: "agent/" + itoa(i)}, "bind-mount", "p-"+itoa(i))
			if err != nil {
				errs[i] = err
				return
			}
			commitFile(t, ws.Dir, "f.txt", itoa(i), "agent "+itoa(i))
			if _, err := ws.Close(ctx); err != nil {
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-listed; err != nil {
		t.Fatalf("git worktree list meanwhile: %v", err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if got := git(t, r.Root, "log", "-1", "--format=%s", "agent/"+itoa(i)); got != "agent "+itoa(i) {
			t.Fatalf("branch agent/%d at %q", i, got)
		}
	}
	if got := git(t, r.Root, "worktree", "list", "--porcelain", "-z"); strings.Count(got, "worktree ") != 1 {
		t.Fatalf("worktrees left:\n%q", got)
	}
	if es, _ := os.ReadDir(filepath.Join(r.CommonDir, "worktrees")); len(es) != 0 {
		t.Fatalf("admin dirs left: %v", es)
	}
	git(t, r.Root, "fsck", "--no-progress")
}

// TestFIFOsAreNoRefs: a sandbox can put a FIFO where sanddune reads a
// ref or a .git file (git itself would wait for a writer there): it is
// no ref, and Close keeps the worktree whose .git it is.
func TestFIFOsAreNoRefs(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws := prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractBindMount, "r1")
	want, err := r.Refs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(r.CommonDir, "refs", "heads", "fifo"), filepath.Join(ws.Dir, ".git")} {
		os.Remove(p)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := r.Refs(ctx); err != nil || !equalMaps(got, want) {
		t.Fatalf("Refs %v %v, want %v", got, err, want)
	}
	if closed, _ := ws.Close(ctx); closed.PreservedPath != ws.Dir {
		t.Fatalf("close %+v", closed)
	}
}

// TestSparseCheckoutWorktreeMadeByGit: in a repository using sparse
// checkout, git makes the run's worktree (its `worktree add` carries the
// sparse patterns over), so the worktree holds only what the user's
// checkout holds, not a full checkout.
func TestSparseCheckoutWorktreeMadeByGit(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	commitFile(t, r.Root, "big/x.txt", "x", "big dir")
	git(t, r.Root, "sparse-checkout", "set", "--no-cone", "/a.txt")
	if r.plainLayout() {
		t.Fatal("a sparse checkout counts as a plain layout")
	}
	ws := prepare(t, r, Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "sparse")
	if _, err := os.Stat(filepath.Join(ws.Dir, "big", "x.txt")); !os.IsNotExist(err) {
		t.Fatalf("the worktree has big/x.txt, outside the sparse checkout: %v", err)
	}
	if got := readFile(t, filepath.Join(ws.Dir, "a.txt")); got != "a\n" {
		t.Fatalf("a.txt %q", got)
	}
}
