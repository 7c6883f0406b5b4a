package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
)

var ctx = context.Background()

func TestOpen(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	sub := filepath.Join(r.Root, "sub")
	os.Mkdir(sub, 0o755)
	r2, err := Open(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	if r2.Root != r.Root || r2.CommonDir != filepath.Join(r.Root, ".git") || r2.GitDir != r2.CommonDir {
		t.Fatalf("got %+v", r2)
	}
	if b, _ := r.CurrentBranch(ctx); b != "main" {
		t.Fatalf("branch %q", b)
	}
	git(t, r.Root, "checkout", "--quiet", "--detach")
	if b, err := r.CurrentBranch(ctx); err != nil || b != "" {
		t.Fatalf("detached: %q %v", b, err)
	}
	if _, err := Open(ctx, t.TempDir()); err == nil || !strings.Contains(err.Error(), "not inside a git working tree") {
		t.Fatalf("want not-a-repo error, got %v", err)
	}
}

// TestOpenCheckout: one git call tells the repository, its commit and its
// branch, detached too; a repository without commits is opened with
// ErrNoCommits, a directory outside any with the not-a-repo error.
func TestOpenCheckout(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	sub := filepath.Join(r.Root, "sub")
	os.Mkdir(sub, 0o755)
	head := git(t, r.Root, "rev-parse", "HEAD")
	r2, commit, branch, err := OpenCheckout(ctx, sub)
	if err != nil || r2.Root != r.Root || r2.GitDir != r.GitDir || r2.CommonDir != r.CommonDir || commit != head || branch != "main" {
		t.Fatalf("got %+v %q %q %v, want %+v %q main", r2, commit, branch, err, r, head)
	}
	if c, b, dirty, err := r.Checkout(ctx); c != head || b != "main" || dirty || err != nil {
		t.Fatalf("Checkout: %q %q %v %v", c, b, dirty, err)
	}
	os.WriteFile(filepath.Join(r.Root, "untracked"), nil, 0o644)
	if _, _, dirty, _ := r.Checkout(ctx); dirty {
		t.Fatalf("Checkout: an untracked file made the checkout dirty")
	}
	git(t, r.Root, "checkout", "--quiet", "--detach")
	if _, commit, branch, err = OpenCheckout(ctx, r.Root); err != nil || commit != head || branch != "" {
		t.Fatalf("detached: %q %q %v", commit, branch, err)
	}
	os.WriteFile(filepath.Join(r.Root, "README"), []byte("changed\n"), 0o644)
	if c, b, dirty, err := r.Checkout(ctx); c != head || b != "" || !dirty || err != nil {
		t.Fatalf("Checkout detached, a tracked file changed: %q %q %v %v", c, b, dirty, err)
	}
	empty := t.TempDir()
	git(t, empty, "init", "--quiet", "-b", "main")
	if r3, _, _, err := OpenCheckout(ctx, empty); !errors.Is(err, ErrNoCommits) || r3 == nil || r3.Root != empty {
		t.Fatalf("no commits: %+v %v", r3, err)
	}
	if _, _, _, err := OpenCheckout(ctx, t.TempDir()); err == nil || !strings.Contains(err.Error(), "not inside a git working tree") {
		t.Fatalf("want not-a-repo error, got %v", err)
	}
}

// TestIdentity: the author identity git commits with in the repository.
func TestIdentity(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	git(t, r.Root, "commit", "-q", "--allow-empty", "-m", "who")
	n, e := r.Identity(ctx)
	if want := git(t, r.Root, "log", "-1", "--format=%an\n%ae"); n+"\n"+e != want {
		t.Fatalf("identity %q %q, git commits as %q", n, e, want)
	}
}

func TestOpenWithoutGitSaysGitIsMissing(t *testing.T) {
	r := newRepo(t)
	t.Setenv("PATH", t.TempDir())
	_, err := Open(ctx, r.Root)
	if !errors.Is(err, ErrGitMissing) || strings.Contains(err.Error(), "not inside") || !strings.Contains(err.Error(), "git is not installed or not on PATH") {
		t.Fatalf("got %v", err)
	}
}

func TestGitErrorCarriesStderr(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	_, err := r.Git(ctx, "rev-parse", "--verify", "no-such-branch")
	var ge *GitError
	if !errors.As(err, &ge) || ge.ExitCode != 128 || !strings.Contains(err.Error(), "Needed a single revision") {
		t.Fatalf("got %#v", err)
	}
}

func TestGitIgnoresInheritedRepoEnv(t *testing.T) {
	r := newRepo(t)
	other := newRepo(t)
	t.Setenv("GIT_DIR", other.CommonDir)
	t.Setenv("LC_ALL", "de_DE.UTF-8")
	got, err := Open(ctx, r.Root)
	if err != nil || got.Root != r.Root {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestCommits(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	base := git(t, r.Root, "rev-parse", "HEAD")
	commitFile(t, r.Root, "x", "1", "first change")
	gitWithEnv(t, r.Root, []string{"GIT_AUTHOR_NAME=Agent Smith", "GIT_AUTHOR_EMAIL=agent@example.com"},
		"commit", "--quiet", "--allow-empty", "-m", "second change\n\nbody")
	cs, err := r.Commits(ctx, base, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0].Subject != "first change" || cs[1].Subject != "second change" ||
		cs[1].Author != "Agent Smith" || cs[1].AuthorEmail != "agent@example.com" || len(cs[1].SHA) != 40 {
		t.Fatalf("got %+v", cs)
	}
	if cs[1].String() != cs[1].SHA[:7]+" second change" {
		t.Fatalf("String() = %q", cs[1].String())
	}
	if cs, err := r.Commits(ctx, "HEAD", "HEAD"); err != nil || len(cs) != 0 {
		t.Fatalf("empty range: %v %v", cs, err)
	}
}

func TestHeadStrategyWorksInHostRepo(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws := prepare(t, r, Strategy{}, sdk.ContractBindMount, "fix-42")
	if ws.Dir != r.Root || ws.Branch != "main" || ws.TargetBranch != "main" || ws.Temp {
		t.Fatalf("got %+v", ws)
	}
	if len(ws.GitMounts) != 0 {
		t.Fatalf("head in a normal repo needs no git mounts (.git is inside the repo): %+v", ws.GitMounts)
	}
	commitFile(t, r.Root, "b.txt", "b", "agent work")
	cs, err := ws.Commits(ctx)
	if err != nil || subjects(cs) != "agent work" {
		t.Fatalf("commits %v %v", cs, err)
	}
	if res := closeWS(t, ws); res != (CloseResult{}) {
		t.Fatalf("close %+v", res)
	}
	if _, err := os.Stat(r.Root); err != nil {
		t.Fatal("head must never remove the host repo")
	}
}

var tempBranchRe = regexp.MustCompile(`^sanddune/fix-42/\d{8}-\d{6}-[0-9a-f]{6}$`)

func TestMergeToHeadFastForward(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	base := git(t, r.Root, "rev-parse", "HEAD")
	ws := prepare(t, r, Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "Fix 42")
	if !tempBranchRe.MatchString(strings.Replace(ws.Branch, "fix-42", "fix-42", 1)) {
		t.Fatalf("temp branch %q", ws.Branch)
	}
	if filepath.Dir(ws.Dir) != r.StateDir("worktrees") || ws.Base != base || !ws.Temp || ws.TargetBranch != "main" {
		t.Fatalf("got %+v", ws)
	}
	if got := git(t, ws.Dir, "rev-parse", "--abbrev-ref", "HEAD"); got != ws.Branch {
		t.Fatalf("worktree on %q", got)
	}
	hostClean(t, r.Root) // .sanddune/worktrees is ignored
	if cfg := readFile(t, filepath.Join(r.CommonDir, "config")); strings.Contains(cfg, "sanddune") {
		t.Fatalf("repo config written:\n%s", cfg)
	}
	commitFile(t, ws.Dir, "b.txt", "b\n", "agent one")
	commitFile(t, ws.Dir, "c.txt", "c\n", "agent two")
	res, err := ws.Merge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if subjects(res.Commits) != "agent one,agent two" || res.MergeCommit != "" || res.Target != "main" {
		t.Fatalf("got %+v", res)
	}
	if got := git(t, r.Root, "rev-parse", "main"); got != res.Head || got != res.Commits[1].SHA {
		t.Fatalf("main at %s, want %s", got, res.Head)
	}
	if readFile(t, filepath.Join(r.Root, "c.txt")) != "c\n" {
		t.Fatal("host working tree not updated")
	}
	hostClean(t, r.Root)
	closed := closeWS(t, ws)
	if closed != (CloseResult{}) {
		t.Fatalf("close %+v", closed)
	}
	if _, err := os.Stat(ws.Dir); !os.IsNotExist(err) {
		t.Fatal("clean worktree not removed")
	}
	if out, _ := r.Git(ctx, "branch", "--list", "sanddune/*"); out != "" {
		t.Fatalf("temp branch not deleted: %s", out)
	}
	if out := git(t, r.Root, "worktree", "list", "--porcelain"); strings.Contains(out, ".sanddune") {
		t.Fatalf("worktree metadata left:\n%s", out)
	}
	hostClean(t, r.Root)
}

func TestMergeToHeadDivergedMakesMergeCommit(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws := prepare(t, r, Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "fix-42")
	commitFile(t, ws.Dir, "agent.txt", "agent\n", "agent change")
	hostCommit := commitFile(t, r.Root, "host.txt", "host\n", "host change")
	res, err := ws.Merge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if subjects(res.Commits) != "agent change" {
		t.Fatalf("commits must be the agent's only, got %q", subjects(res.Commits))
	}
	if res.MergeCommit == "" || git(t, r.Root, "rev-parse", "main") != res.MergeCommit {
		t.Fatalf("got %+v", res)
	}
	if p := git(t, r.Root, "rev-parse", "main^1"); p != hostCommit {
		t.Fatalf("first parent %s, want host commit", p)
	}
	if readFile(t, filepath.Join(r.Root, "agent.txt")) != "agent\n" || readFile(t, filepath.Join(r.Root, "host.txt")) != "host\n" {
		t.Fatal("both changes must be in the host tree")
	}
	hostClean(t, r.Root)
	if res := closeWS(t, ws); res.KeptBranch != "" {
		t.Fatalf("close %+v", res)
	}
}

func TestMergeToHeadConflictLeavesHostClean(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws := prepare(t, r, Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "fix-42")
	agent := commitFile(t, ws.Dir, "a.txt", "agent\n", "agent edits a")
	hostHead := commitFile(t, r.Root, "a.txt", "host\n", "host edits a")
	_, err := ws.Merge(ctx)
	var me *MergeError
	if !errors.As(err, &me) {
		t.Fatalf("want *MergeError, got %v", err)
	}
	if me.Reason != "conflicts" || strings.Join(me.Files, ",") != "a.txt" || len(me.Commits) != 1 {
		t.Fatalf("got %+v", me)
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{ws.Branch, agent[:7] + " agent edits a", "git merge " + ws.Branch, "cd " + r.Root, "a.txt"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	hostClean(t, r.Root)
	if got := git(t, r.Root, "rev-parse", "main"); got != hostHead {
		t.Fatal("main moved")
	}
	if readFile(t, filepath.Join(r.Root, "a.txt")) != "host\n" {
		t.Fatal("host file changed")
	}
	closed := closeWS(t, ws)
	if closed.KeptBranch != ws.Branch || closed.PreservedPath != "" {
		t.Fatalf("close %+v", closed)
	}
	if got := git(t, r.Root, "rev-parse", ws.Branch); got != agent {
		t.Fatal("temp branch lost")
	}
	hostClean(t, r.Root)
}

func TestMergeToHeadRefusesDirtyOverlap(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws := prepare(t, r, Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "fix-42")
	commitFile(t, ws.Dir, "a.txt", "agent\n", "agent edits a")
	commitFile(t, ws.Dir, "new.txt", "agent\n", "agent adds new")
	head := git(t, r.Root, "rev-parse", "HEAD")

	writeFile(t, filepath.Join(r.Root, "a.txt"), "local edit\n")
	_, err := ws.Merge(ctx)
	var me *MergeError
	if !errors.As(err, &me) || strings.Join(me.Files, ",") != "a.txt" || !strings.Contains(me.Reason, "local changes") {
		t.Fatalf("got %v", err)
	}
	t.Log(err)
	if !strings.Contains(err.Error(), "commit or stash") || !strings.HasPrefix(me.Command, "cd ") {
		t.Fatalf("command %q", me.Command)
	}
	if readFile(t, filepath.Join(r.Root, "a.txt")) != "local edit\n" || git(t, r.Root, "rev-parse", "HEAD") != head {
		t.Fatal("host changed")
	}

	// An untracked file where the merge adds one is an overlap too.
	git(t, r.Root, "checkout", "--", "a.txt")
	writeFile(t, filepath.Join(r.Root, "new.txt"), "mine\n")
	if _, err := ws.Merge(ctx); !errors.As(err, &me) || strings.Join(me.Files, ",") != "new.txt" {
		t.Fatalf("got %v", err)
	}
	if readFile(t, filepath.Join(r.Root, "new.txt")) != "mine\n" {
		t.Fatal("untracked file overwritten")
	}

	// Local changes the merge does not touch are fine and kept.
	os.Remove(filepath.Join(r.Root, "new.txt"))
	writeFile(t, filepath.Join(r.Root, "README"), "local readme\n")
	writeFile(t, filepath.Join(r.Root, "scratch.txt"), "scratch\n")
	res, err := ws.Merge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if git(t, r.Root, "rev-parse", "HEAD") != res.Head || readFile(t, filepath.Join(r.Root, "a.txt")) != "agent\n" {
		t.Fatal("merge not applied")
	}
	if readFile(t, filepath.Join(r.Root, "README")) != "local readme\n" || readFile(t, filepath.Join(r.Root, "scratch.txt")) != "scratch\n" {
		t.Fatal("local changes lost")
	}
	closeWS(t, ws)
}

func TestMergeToHeadTargetNotCheckedOut(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws := prepare(t, r, Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "fix-42")
	commitFile(t, ws.Dir, "b.txt", "b\n", "agent")
	git(t, r.Root, "switch", "--quiet", "-c", "other")
	commitFile(t, r.Root, "o.txt", "o\n", "other work")
	res, err := ws.Merge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if git(t, r.Root, "rev-parse", "main") != res.Head || git(t, r.Root, "rev-parse", "--abbrev-ref", "HEAD") != "other" {
		t.Fatal("main not updated, or host switched")
	}
	if _, err := os.Stat(filepath.Join(r.Root, "b.txt")); !os.IsNotExist(err) {
		t.Fatal("the host's other branch must not get the agent's files")
	}
	hostClean(t, r.Root)
	closeWS(t, ws)
}

// TestMergeToHeadKeepsWhatIsCommittedAfterTheMerge: a commit on the temp
// branch after Merge read it (something still running in the sandbox
// while it is removed) is not deleted with the branch: Close keeps the
// branch, and says why.
func TestMergeToHeadKeepsWhatIsCommittedAfterTheMerge(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws := prepare(t, r, Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "late")
	commitFile(t, ws.Dir, "b.txt", "b\n", "agent")
	if _, err := ws.Merge(ctx); err != nil {
		t.Fatal(err)
	}
	late := commitFile(t, ws.Dir, "c.txt", "c\n", "late")
	closed, err := ws.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "moved after its merge") || closed.KeptBranch != ws.Branch {
		t.Fatalf("Close: %+v, %v; want the branch kept, and why", closed, err)
	}
	if got := git(t, r.Root, "rev-parse", ws.Branch); got != late {
		t.Fatalf("branch at %s, want the late commit %s", got, late)
	}
}

func TestMergeToHeadWithoutCommits(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws := prepare(t, r, Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "noop")
	res, err := ws.Merge(ctx)
	if err != nil || len(res.Commits) != 0 || res.Head != "" {
		t.Fatalf("got %+v %v", res, err)
	}
	if closed := closeWS(t, ws); closed != (CloseResult{}) {
		t.Fatalf("close %+v", closed)
	}
	if out := git(t, r.Root, "branch", "--list", "sanddune/*"); out != "" {
		t.Fatalf("temp branch left: %s", out)
	}
}

func TestCloseDropsEmptyTempBranchWithoutMerge(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws := prepare(t, r, Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "failed")
	if closed := closeWS(t, ws); closed != (CloseResult{}) {
		t.Fatalf("close %+v", closed)
	}
	if out := git(t, r.Root, "branch", "--list", "sanddune/*"); out != "" {
		t.Fatalf("temp branch left: %s", out)
	}
	// With commits and no merge (the run failed), the branch is kept.
	ws = prepare(t, r, Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "failed")
	commitFile(t, ws.Dir, "b.txt", "b", "work")
	if closed := closeWS(t, ws); closed.KeptBranch != ws.Branch || closed.PreservedPath != "" {
		t.Fatalf("close %+v", closed)
	}
}

func TestCloseDirtyPreservedCleanRemoved(t *testing.T) {
	t.Parallel()
	for _, dirt := range []struct {
		name string
		make func(dir string)
	}{
		{"untracked", func(dir string) { writeFile(t, filepath.Join(dir, "new.txt"), "x") }},
		{"unstaged", func(dir string) { writeFile(t, filepath.Join(dir, "a.txt"), "changed") }},
		{"staged", func(dir string) {
			writeFile(t, filepath.Join(dir, "s.txt"), "x")
			git(t, dir, "add", "s.txt")
		}},
	} {
		t.Run(dirt.name, func(t *testing.T) {
			r := newRepo(t)
			ws := prepare(t, r, Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "fix-42")
			commitFile(t, ws.Dir, "b.txt", "b", "agent")
			if _, err := ws.Merge(ctx); err != nil {
				t.Fatal(err)
			}
			dirt.make(ws.Dir)
			closed := closeWS(t, ws)
			if closed.PreservedPath != ws.Dir || closed.KeptBranch != ws.Branch {
				t.Fatalf("close %+v", closed)
			}
			if _, err := os.Stat(ws.Dir); err != nil {
				t.Fatal("dirty worktree removed")
			}
			if again := closeWS(t, ws); again != closed {
				t.Fatal("Close is not idempotent")
			}
			hostClean(t, r.Root)
		})
	}
	t.Run("ignored files do not count", func(t *testing.T) {
		r := newRepo(t)
		commitFile(t, r.Root, ".gitignore", "node_modules/\n", "ignore")
		ws := prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractBindMount, "fix-42")
		writeFile(t, filepath.Join(ws.Dir, "node_modules", "m.js"), "x")
		if closed := closeWS(t, ws); closed.PreservedPath != "" {
			t.Fatalf("close %+v", closed)
		}
		if _, err := os.Stat(ws.Dir); !os.IsNotExist(err) {
			t.Fatal("worktree with only ignored files not removed")
		}
	})
}

func TestBranchStrategyCreatesFromHeadOrBase(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	head := git(t, r.Root, "rev-parse", "HEAD")
	git(t, r.Root, "branch", "dev")
	dev := commitFile(t, r.Root, "m.txt", "m", "main moves on") // main is ahead of dev now
	_ = dev
	git(t, r.Root, "config", "branch.autoSetupMerge", "always")

	ws := prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/from-dev", BaseBranch: "dev"}, sdk.ContractBindMount, "r1")
	if ws.Base != head || ws.Dir != r.StateDir("worktrees", "agent-from-dev") || ws.TargetBranch != "agent/from-dev" || ws.Temp {
		t.Fatalf("got %+v", ws)
	}
	if got := git(t, ws.Dir, "symbolic-ref", "HEAD"); got != "refs/heads/agent/from-dev" {
		t.Fatalf("HEAD %s", got)
	}
	commitFile(t, ws.Dir, "x.txt", "x", "agent work")
	cs, _ := ws.Commits(ctx)
	if subjects(cs) != "agent work" {
		t.Fatalf("commits %q", subjects(cs))
	}
	if closed := closeWS(t, ws); closed != (CloseResult{}) {
		t.Fatalf("close %+v", closed)
	}
	if git(t, r.Root, "rev-parse", "agent/from-dev") != cs[0].SHA {
		t.Fatal("named branch must survive worktree removal")
	}

	ws = prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/from-head"}, sdk.ContractBindMount, "r2")
	if ws.Base != git(t, r.Root, "rev-parse", "main") {
		t.Fatal("new branch must start from HEAD")
	}
	closeWS(t, ws)

	// An existing branch is checked out as is; base_branch is ignored.
	ws = prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/from-dev", BaseBranch: "main"}, sdk.ContractBindMount, "r3")
	if ws.Base != cs[0].SHA {
		t.Fatalf("existing branch base %s, want its tip", ws.Base)
	}
	cs, _ = ws.Commits(ctx)
	if len(cs) != 0 {
		t.Fatal("commits of earlier runs must not be reported")
	}
	closeWS(t, ws)
	if cfg := readFile(t, filepath.Join(r.CommonDir, "config")); strings.Contains(cfg, "[branch ") {
		t.Fatalf("upstream config written despite branch.autoSetupMerge=always:\n%s", cfg)
	}
	hostClean(t, r.Root)
}

// TestBranchStrategyPrunesAWorktreeWhoseDirectoryIsGone: a worktree of
// the branch deleted by hand (rm -rf) no longer holds the branch: the run
// checks it out afresh from its tip; a run of another branch prunes
// nothing.
func TestBranchStrategyPrunesAWorktreeWhoseDirectoryIsGone(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	gone := filepath.Join(t.TempDir(), "gone")
	git(t, r.Root, "worktree", "add", "--quiet", "-b", "agent/gone", gone)
	tip := commitFile(t, gone, "g.txt", "g", "work in the gone worktree")
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	// A run of another branch leaves it alone (it may be a parallel run's,
	// its files being removed).
	closeWS(t, prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/other"}, sdk.ContractBindMount, "r0"))
	if out := git(t, r.Root, "worktree", "list", "--porcelain"); !strings.Contains(out, gone) {
		t.Errorf("another branch's run pruned the gone worktree:\n%s", out)
	}
	ws := prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/gone"}, sdk.ContractBindMount, "r1")
	if ws.Dir != r.StateDir("worktrees", "agent-gone") || ws.Base != tip || !ws.ExistingBranch {
		t.Fatalf("got %+v, want the branch checked out afresh at %s", ws, tip)
	}
	closeWS(t, ws)
	if out := git(t, r.Root, "worktree", "list", "--porcelain"); strings.Contains(out, gone) {
		t.Errorf("the gone worktree is still listed:\n%s", out)
	}
}

func TestBranchStrategyContinuesFromPreservedWorktree(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws := prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractBindMount, "r1")
	writeFile(t, filepath.Join(ws.Dir, "wip.txt"), "wip")
	if closed := closeWS(t, ws); closed.PreservedPath != ws.Dir {
		t.Fatalf("close %+v", closed)
	}

	// Dirty (an interrupted run preserved it): the rerun continues from
	// the uncommitted changes.
	ws2 := prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractBindMount, "r2")
	if !ws2.Reused || !ws2.ReusedDirty || !ws2.ExistingBranch || ws2.Dir != ws.Dir || readFile(t, filepath.Join(ws2.Dir, "wip.txt")) != "wip" {
		t.Fatalf("got %+v", ws2)
	}
	git(t, ws2.Dir, "add", "wip.txt")
	git(t, ws2.Dir, "commit", "--quiet", "-m", "wip")
	if closed := closeWS(t, ws2); closed.PreservedPath != "" {
		t.Fatalf("close %+v", closed)
	}

	// The clean worktree is gone; the branch continues.
	tip := git(t, r.Root, "rev-parse", "agent/x")
	ws3 := prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractBindMount, "r3")
	if ws3.ReusedDirty || !ws3.ExistingBranch || ws3.Dir != ws.Dir || ws3.Base != tip {
		t.Fatalf("got %+v", ws3)
	}
	closeWS(t, ws3)
}

func TestBranchLimitsAreWhatGitAndTheWorktreeAllow(t *testing.T) {
	r := newRepo(t)
	long := strings.Repeat("b", MaxBranchName)
	ws := prepare(t, r, Strategy{Type: StrategyBranch, Branch: long}, sdk.ContractBindMount, "r1")
	commitFile(t, ws.Dir, "x.txt", "x", "work")
	closeWS(t, ws)
	if ws.ExistingBranch {
		t.Fatal("a new branch reported as existing")
	}
	ws = prepare(t, r, Strategy{Type: StrategyBranch, Branch: long}, sdk.ContractBindMount, "r2")
	if !ws.ExistingBranch {
		t.Fatal("an existing branch not reported")
	}
	closeWS(t, ws)
	if _, err := tryPrepare(r, Strategy{Type: StrategyBranch, Branch: strings.Repeat("b", 300)}, sdk.ContractBindMount, "r3"); err == nil ||
		!strings.Contains(err.Error(), "at most 240") {
		t.Fatalf("300-byte branch: %v", err)
	}
}

func TestBranchStrategyReuseFastForwardsFromOrigin(t *testing.T) {
	t.Parallel()
	origin := newRepo(t)
	git(t, origin.Root, "branch", "agent/x")
	clone := t.TempDir()
	git(t, clone, "clone", "--quiet", origin.Root, ".")
	r, err := Open(ctx, clone)
	if err != nil {
		t.Fatal(err)
	}
	git(t, clone, "branch", "agent/x", "origin/agent/x")
	ws := prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractBindMount, "r1")
	writeFile(t, filepath.Join(ws.Dir, "wip.txt"), "wip")
	closeWS(t, ws) // preserved
	os.Remove(filepath.Join(ws.Dir, "wip.txt"))

	git(t, origin.Root, "switch", "--quiet", "agent/x")
	up := commitFile(t, origin.Root, "up.txt", "up", "upstream work")
	ws = prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractBindMount, "r2")
	if !ws.Reused || ws.Base != up || git(t, ws.Dir, "rev-parse", "HEAD") != up {
		t.Fatalf("not fast-forwarded: %+v", ws)
	}
	closeWS(t, ws)
}

func TestBranchCheckedOutElsewhere(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	git(t, r.Root, "branch", "agent/x")
	other := filepath.Join(t.TempDir(), "elsewhere")
	git(t, r.Root, "worktree", "add", "--quiet", other, "agent/x")
	_, err := tryPrepare(r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractBindMount, "r1")
	if err == nil || !strings.Contains(err.Error(), "already checked out") || !strings.Contains(err.Error(), other) {
		t.Fatalf("got %v", err)
	}
	_, err = tryPrepare(r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractIsolated, "r1")
	if err == nil || !strings.Contains(err.Error(), other) {
		t.Fatalf("isolated: got %v", err)
	}
	// Being rebased there, its HEAD detached, it is still git's checked
	// out branch: git refuses it, and the run leaves nothing.
	writeFile(t, filepath.Join(other, "c.txt"), "theirs\n")
	git(t, other, "add", "c.txt")
	git(t, other, "commit", "--quiet", "-m", "theirs")
	commitFile(t, r.Root, "c.txt", "ours\n", "ours")
	if _, err := Git(ctx, other, "rebase", "--quiet", "main"); err == nil {
		t.Fatal("the rebase was meant to stop at a conflict")
	}
	_, err = tryPrepare(r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractBindMount, "r1")
	if err == nil || !strings.Contains(err.Error(), "agent/x") || !strings.Contains(err.Error(), other) {
		t.Fatalf("rebasing: got %v", err)
	}
	if _, err := os.Stat(r.StateDir("worktrees", "agent-x")); !os.IsNotExist(err) {
		t.Fatalf("the refused worktree is left: %v", err)
	}
	if got := git(t, r.Root, "worktree", "list", "--porcelain"); strings.Count(got, "worktree ") != 2 {
		t.Fatalf("worktrees:\n%s", got)
	}
	// The failed runs left no locks behind.
	entries, _ := os.ReadDir(r.LockDir())
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".lock") {
			t.Fatalf("lock left: %s", e.Name())
		}
	}
}

func TestIsolatedStrategiesCreateBranchesOnly(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	base := git(t, r.Root, "rev-parse", "HEAD")
	ws := prepare(t, r, Strategy{}, sdk.ContractIsolated, "iso")
	if ws.Dir != "" || ws.GitMounts != nil || !ws.Temp || ws.Base != base || !tempBranchRe.MatchString(strings.Replace(ws.Branch, "iso", "fix-42", 1)) {
		t.Fatalf("got %+v", ws)
	}
	if git(t, r.Root, "rev-parse", ws.Branch) != base {
		t.Fatal("temp branch not created at base")
	}
	closeWS(t, ws)

	ws = prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/iso"}, sdk.ContractIsolated, "iso")
	if ws.Dir != "" || ws.Base != base || git(t, r.Root, "rev-parse", "agent/iso") != base {
		t.Fatalf("got %+v", ws)
	}
	closeWS(t, ws)
	if _, err := os.Stat(r.StateDir("worktrees")); !os.IsNotExist(err) {
		t.Fatal("isolated runs must not create worktrees")
	}
}

func TestLockContentionBetweenRuns(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws := prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractBindMount, "fix-42")
	_, err := tryPrepare(r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractBindMount, "other")
	var le *LockedError
	if !errors.As(err, &le) {
		t.Fatalf("want *LockedError, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"branch agent/x is locked by run fix-42", "pid " + itoa(os.Getpid())} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	// Branches whose worktree names collide are caught by the worktree lock.
	_, err = tryPrepare(r, Strategy{Type: StrategyBranch, Branch: "agent-x"}, sdk.ContractBindMount, "other")
	if !errors.As(err, &le) || !strings.HasPrefix(le.Key, "worktree ") {
		t.Fatalf("got %v", err)
	}
	// Head runs on the same repo exclude each other too.
	h := prepare(t, r, Strategy{}, sdk.ContractBindMount, "h1")
	if _, err := tryPrepare(r, Strategy{}, sdk.ContractBindMount, "h2"); !errors.As(err, &le) || le.Holder.Run != "h1" {
		t.Fatalf("got %v", err)
	}
	closeWS(t, h)
	closeWS(t, ws)
	ws = prepare(t, r, Strategy{Type: StrategyBranch, Branch: "agent/x"}, sdk.ContractBindMount, "other")
	closeWS(t, ws)
}

func TestFailedPrepareLeavesNothing(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	hook := filepath.Join(r.CommonDir, "hooks", "post-checkout")
	writeFile(t, hook, "#!/bin/sh\necho hook refuses >&2\nexit 1\n")
	os.Chmod(hook, 0o755)
	for _, s := range []Strategy{{Type: StrategyMergeToHead}, {Type: StrategyBranch, Branch: "agent/new"}} {
		if _, err := tryPrepare(r, s, sdk.ContractBindMount, "r"); err == nil || !strings.Contains(err.Error(), "hook refuses") {
			t.Fatalf("%s: got %v", s.Type, err)
		}
		if out := git(t, r.Root, "branch", "--list", "sanddune/*", "agent/*"); out != "" {
			t.Fatalf("%s: branch left: %s", s.Type, out)
		}
		if out := git(t, r.Root, "worktree", "list", "--porcelain"); strings.Contains(out, ".sanddune") {
			t.Fatalf("%s: worktree left:\n%s", s.Type, out)
		}
		if entries, _ := os.ReadDir(r.StateDir("worktrees")); len(entries) != 1 { // .gitignore
			t.Fatalf("%s: dirs left: %v", s.Type, entries)
		}
	}
	os.Remove(hook)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	plan, _ := Resolve(Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "main", false)
	if _, err := Prepare(cctx, r, plan, PrepareOptions{RunName: "c"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if out := git(t, r.Root, "branch", "--list", "sanddune/*"); out != "" {
		t.Fatalf("branch left: %s", out)
	}
	// An existing branch is never deleted by a failed Prepare.
	git(t, r.Root, "branch", "agent/old")
	writeFile(t, hook, "#!/bin/sh\nexit 1\n")
	os.Chmod(hook, 0o755)
	if _, err := tryPrepare(r, Strategy{Type: StrategyBranch, Branch: "agent/old"}, sdk.ContractBindMount, "r"); err == nil {
		t.Fatal("want hook failure")
	}
	git(t, r.Root, "rev-parse", "--verify", "agent/old")
}

// TestMergeToHeadStartsNoMaintenance: the merge into the user's branch
// starts no `git maintenance run --auto` (it would repack the user's
// repository while the run waits). git's trace2 events list every child
// (trace2 is read from the environment or global config only: not
// parallel).
func TestMergeToHeadStartsNoMaintenance(t *testing.T) {
	r := newRepo(t)
	trace := filepath.Join(t.TempDir(), "trace2.json")
	ws := prepare(t, r, Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "Fix 42")
	commitFile(t, ws.Dir, "b.txt", "b\n", "agent one")
	t.Setenv("GIT_TRACE2_EVENT", trace)
	if _, err := ws.Merge(ctx); err != nil {
		t.Fatal(err)
	}
	events := readFile(t, trace)
	if !strings.Contains(events, `"merge"`) {
		t.Fatalf("no merge in git's trace:\n%s", events)
	}
	if strings.Contains(events, `"maintenance"`) {
		t.Fatalf("the merge started git maintenance:\n%s", events)
	}
}
