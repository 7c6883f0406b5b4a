package gitsync

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/core/internal/gittest"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

var ctx = context.Background()

func TestMain(m *testing.M) { gittest.Main(m) }

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := worktree.Git(ctx, dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newRepo makes a host repo on main with a little history.
func newRepo(t *testing.T) *worktree.Repo {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "--quiet", "-b", "main")
	writeFile(t, filepath.Join(dir, "a.txt"), "a\n")
	writeFile(t, filepath.Join(dir, ".gitignore"), "node_modules/\n")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "--quiet", "-m", "initial")
	writeFile(t, filepath.Join(dir, "b.txt"), "b\n")
	git(t, dir, "add", ".")
	git(t, dir, "commit", "--quiet", "-m", "second")
	r, err := worktree.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// prepare resolves and prepares an isolated workspace and syncs it in.
func prepare(t *testing.T, r *worktree.Repo, s worktree.Strategy) (*worktree.Workspace, *fakeSandbox, Spec) {
	t.Helper()
	plan, err := worktree.Resolve(s, sdk.ContractIsolated, "main", false)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := worktree.Prepare(ctx, r, plan, worktree.PrepareOptions{RunName: "iso-run"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close(ctx) })
	sb := newFakeSandbox(t)
	name, email := r.Identity(ctx)
	spec := Spec{HostRepo: r.Root, Branch: ws.Branch, Base: ws.Base, RunName: ws.RunName, AuthorName: name, AuthorEmail: email}
	if err := SyncIn(ctx, sb, spec); err != nil {
		t.Fatal(err)
	}
	return ws, sb, spec
}

func TestSyncInFakeClonesWithSameSHAs(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws, sb, _ := prepare(t, r, worktree.Strategy{})
	got := sb.sh(t, "git rev-parse HEAD; git symbolic-ref HEAD; git log --format=%H main 2>/dev/null || true; git rev-list --count HEAD; cat a.txt; git status --porcelain")
	want := strings.Join([]string{ws.Base, "refs/heads/" + ws.Branch, "2", "a"}, "\n")
	if got != want {
		t.Fatalf("sandbox state:\n%s\nwant:\n%s", got, want)
	}
	// The host's identity is set in the sandbox repo, which had none.
	if id := sb.sh(t, "git config --local user.name; git config --local user.email"); id != "Host User\nhost@example.com" {
		t.Fatalf("identity %q", id)
	}
	if left := sb.sh(t, "ls .git | grep sanddune || true"); left != "" {
		t.Fatalf("temporary files left in the sandbox: %s", left)
	}
}

func TestSyncInFakeKeepsSandboxIdentity(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	sb := newFakeSandbox(t)
	writeFile(t, filepath.Join(sb.info.HomePath, ".gitconfig"), "[user]\n\tname = Image User\n\temail = img@example.com\n")
	plan, _ := worktree.Resolve(worktree.Strategy{}, sdk.ContractIsolated, "main", false)
	ws, err := worktree.Prepare(ctx, r, plan, worktree.PrepareOptions{RunName: "id"})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close(ctx)
	if err := SyncIn(ctx, sb, Spec{HostRepo: r.Root, Branch: ws.Branch, Base: ws.Base}); err != nil {
		t.Fatal(err)
	}
	if id := sb.sh(t, "git config user.name; git config --local user.name || echo none"); id != "Image User\nnone" {
		t.Fatalf("identity %q", id)
	}
}

func TestSyncInRefusesMovedBranch(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	git(t, r.Root, "branch", "x", "HEAD~1")
	err := SyncIn(ctx, newFakeSandbox(t), Spec{HostRepo: r.Root, Branch: "x", Base: git(t, r.Root, "rev-parse", "HEAD")})
	if err == nil || !strings.Contains(err.Error(), "not at the run's base") {
		t.Fatalf("got %v", err)
	}
}

func TestSyncOutFakeKeepsSHAsAuthorsAndMerges(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws, sb, spec := prepare(t, r, worktree.Strategy{})
	sb.sh(t, `
export GIT_AUTHOR_NAME="Agent Smith" GIT_AUTHOR_EMAIL=agent@example.com GIT_AUTHOR_DATE="2001-02-03T04:05:06Z"
echo c > c.txt && git add c.txt && git commit -q -m "agent adds c"
git checkout -q -b side
echo d > d.txt && git add d.txt && git commit -q -m "side adds d"
git checkout -q -
echo e > e.txt && git add e.txt && git commit -q -m "agent adds e"
git merge -q --no-ff -m "merge side" side`)
	sandboxHead := sb.sh(t, "git rev-parse HEAD")
	out, err := SyncOut(ctx, sb, spec)
	if err != nil {
		t.Fatal(err)
	}
	if out.Head != sandboxHead || out.PatchPath != "" || len(out.Commits) != 4 {
		t.Fatalf("got %+v", out)
	}
	if git(t, r.Root, "rev-parse", ws.Branch) != sandboxHead {
		t.Fatal("host branch not at the sandbox's HEAD")
	}
	if got := git(t, r.Root, "log", "-1", "--format=%an <%ae> %aI", ws.Branch+"^2"); got != "Agent Smith <agent@example.com> 2001-02-03T04:05:06+00:00" {
		t.Fatalf("author %q", got)
	}
	if parents := git(t, r.Root, "log", "-1", "--format=%P", ws.Branch); len(strings.Fields(parents)) != 2 {
		t.Fatal("merge commit lost")
	}
	for _, c := range out.Commits {
		if c.Author != "Agent Smith" {
			t.Fatalf("commit %+v", c)
		}
	}
	// Idempotent: a second sync out changes nothing.
	again, err := SyncOut(ctx, sb, spec)
	if err != nil || len(again.Commits) != 4 || git(t, r.Root, "rev-parse", ws.Branch) != sandboxHead {
		t.Fatalf("second sync: %+v %v", again, err)
	}
	// merge-to-head then lands exactly the agent's commits on main.
	res, err := ws.Merge(ctx)
	if err != nil || len(res.Commits) != 4 || git(t, r.Root, "rev-parse", "main") != sandboxHead {
		t.Fatalf("merge %+v %v", res, err)
	}
	if st := git(t, r.Root, "status", "--porcelain"); st != "" {
		t.Fatalf("host dirty: %s", st)
	}
	closed, err := ws.Close(ctx)
	if err != nil || closed != (worktree.CloseResult{}) {
		t.Fatalf("close %+v %v", closed, err)
	}
	if b := git(t, r.Root, "branch", "--list", "sanddune/*"); b != "" {
		t.Fatalf("temp branch left: %s", b)
	}
}

func TestSyncOutFakeSavesUncommittedWork(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws, sb, spec := prepare(t, r, worktree.Strategy{Type: worktree.StrategyBranch, Branch: "agent/x"})
	sb.sh(t, `
echo committed > c.txt && git add c.txt && git -c user.name=A -c user.email=a@x commit -q -m "agent commit"
echo staged > s.txt && git add s.txt
echo changed >> a.txt
rm b.txt
echo untracked > u.txt
mkdir -p node_modules && echo ignored > node_modules/m.js
printf '\000\001binary' > bin.dat`)
	before := sb.sh(t, "git status --porcelain")
	out, err := SyncOut(ctx, sb, spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Commits) != 1 || out.PatchPath == "" {
		t.Fatalf("got %+v", out)
	}
	if filepath.Dir(out.PatchPath) != r.StateDir("patches") || !strings.HasPrefix(filepath.Base(out.PatchPath), "iso-run-") {
		t.Fatalf("patch path %s", out.PatchPath)
	}
	if after := sb.sh(t, "git status --porcelain"); after != before {
		t.Fatalf("sandbox index changed:\n%s\nwas:\n%s", after, before)
	}
	if st := git(t, r.Root, "status", "--porcelain"); st != "" {
		t.Fatalf("host dirty after saving the patch: %s", st)
	}
	patch, _ := os.ReadFile(out.PatchPath)
	if strings.Contains(string(patch), "node_modules") {
		t.Fatal("ignored files must not be in the patch")
	}
	// The patch applies on a checkout of the synced branch.
	check := filepath.Join(t.TempDir(), "check")
	git(t, r.Root, "worktree", "add", "--quiet", "--detach", check, ws.Branch)
	defer git(t, r.Root, "worktree", "remove", "--force", check)
	git(t, check, "apply", "--index", out.PatchPath)
	for f, want := range map[string]string{"s.txt": "staged\n", "a.txt": "a\nchanged\n", "u.txt": "untracked\n", "bin.dat": "\x00\x01binary"} {
		if b, _ := os.ReadFile(filepath.Join(check, f)); string(b) != want {
			t.Fatalf("%s = %q after apply", f, b)
		}
	}
	if _, err := os.Stat(filepath.Join(check, "b.txt")); !os.IsNotExist(err) {
		t.Fatal("deletion not in patch")
	}
}

func TestSyncOutFakeNothingToDo(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws, sb, spec := prepare(t, r, worktree.Strategy{})
	out, err := SyncOut(ctx, sb, spec)
	if err != nil || len(out.Commits) != 0 || out.PatchPath != "" || out.Head != ws.Base {
		t.Fatalf("got %+v %v", out, err)
	}
	if _, err := os.Stat(r.StateDir("patches")); !os.IsNotExist(err) {
		t.Fatal("patch dir created without a patch")
	}
}

func TestSyncOutFakeRescuesWhenBranchMoved(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws, sb, spec := prepare(t, r, worktree.Strategy{Type: worktree.StrategyBranch, Branch: "agent/x"})
	sb.sh(t, `echo c > c.txt && git add c.txt && git -c user.name=A -c user.email=a@x commit -q -m "agent commit"`)
	// Someone moves the branch on the host meanwhile.
	moved := git(t, r.Root, "commit-tree", "-p", ws.Base, "-m", "host moved", ws.Base+"^{tree}")
	git(t, r.Root, "update-ref", "refs/heads/agent/x", moved)
	out, err := SyncOut(ctx, sb, spec)
	var re *RescueError
	if !errors.As(err, &re) || len(re.Commits) != 1 || !strings.HasPrefix(re.RescueBranch, "sanddune/rescue/iso-run/") {
		t.Fatalf("got %v", err)
	}
	if git(t, r.Root, "rev-parse", re.RescueBranch) != out.Head || git(t, r.Root, "rev-parse", "agent/x") != moved {
		t.Fatal("rescue branch wrong or host branch overwritten")
	}
	if !strings.Contains(err.Error(), "git merge "+re.RescueBranch) {
		t.Fatalf("message %q", err)
	}
}

func TestSandboxCommandErrorsCarryStderr(t *testing.T) {
	t.Parallel()
	sb := newFakeSandbox(t)
	_, err := sandbox{sb}.git(ctx, nil, "rev-parse", "HEAD")
	if err == nil || exitCode(err) != 128 || !strings.Contains(err.Error(), "not a git repository") {
		t.Fatalf("got %v", err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal(err)
	}
}
