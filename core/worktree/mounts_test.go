package worktree

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/sdk"
)

func TestGitMountsOfWorktree(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	ws := prepare(t, r, Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "m")
	defer closeWS(t, ws)
	gitDir := git(t, ws.Dir, "rev-parse", "--absolute-git-dir")
	common := r.CommonDir
	want := map[string]bool{ // path -> read-only
		gitDir: false, filepath.Join(common, "objects"): false, filepath.Join(common, "refs"): false,
		filepath.Join(common, "logs"): false, filepath.Join(common, "HEAD"): true, filepath.Join(common, "config"): true,
		filepath.Join(common, "info"): true,
	}
	if len(ws.GitMounts) != len(want) {
		t.Fatalf("mounts %+v", ws.GitMounts)
	}
	for _, m := range ws.GitMounts {
		ro, ok := want[m.HostPath]
		if !ok || m.SandboxPath != m.HostPath || m.ReadOnly != ro {
			t.Errorf("unexpected mount %+v", m)
		}
	}
	for _, m := range ws.GitMounts {
		if strings.Contains(m.HostPath, "hooks") {
			t.Errorf("hooks must not be mounted: %+v", m)
		}
	}
}

// TestGitMountsSufficeInBwrap checks that git can commit in the worktree
// when only the worktree and GitMounts are visible (the rest of the host
// repo is hidden by a tmpfs), using bubblewrap as a stand-in sandbox.
func TestGitMountsSufficeInBwrap(t *testing.T) {
	t.Parallel()
	bwrap, err := exec.LookPath("bwrap")
	if err == nil {
		err = exec.Command(bwrap, "--dev-bind", "/", "/", "true").Run()
	}
	if err != nil {
		if os.Getenv("SANDDUNE_REQUIRE_ENGINES") == "1" {
			t.Fatalf("bubblewrap unusable: %v", err)
		}
		t.Skipf("SKIPPING: bubblewrap unusable here (%v)", err)
	}
	r := newRepo(t)
	// A packed branch and a shallow-free repo with some history.
	git(t, r.Root, "branch", "packed")
	git(t, r.Root, "pack-refs", "--all")
	ws := prepare(t, r, Strategy{Type: StrategyMergeToHead}, sdk.ContractBindMount, "bw")
	args := []string{"--dev-bind", "/", "/", "--tmpfs", r.Root, "--bind", ws.Dir, ws.Dir}
	for _, m := range ws.GitMounts {
		flag := "--bind"
		if m.ReadOnly {
			flag = "--ro-bind"
		}
		args = append(args, flag, m.HostPath, m.SandboxPath)
	}
	script := `set -e
cd "$1"
test ! -e "$2/hooks"
echo agent > agent.txt
git add agent.txt
git commit -q -m "agent in sandbox"
git checkout -q -b side
git commit -q --allow-empty -m side
git checkout -q -
git merge -q --no-ff -m "merge side" side
git log --oneline packed -- >/dev/null
git status --porcelain
if git config core.hooksPath /tmp/evil 2>/dev/null; then echo "config writable"; exit 1; fi`
	args = append(args, "sh", "-c", script, "sh", ws.Dir, r.CommonDir)
	cmd := exec.Command(bwrap, args...)
	cmd.Env = gitEnv(nil)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git in bwrap failed: %v\n%s", err, out)
	}
	cs, err := ws.Commits(ctx)
	if err != nil || len(cs) != 3 || !strings.Contains(subjects(cs), "agent in sandbox") {
		t.Fatalf("commits %v %v", cs, err)
	}
	if _, err := ws.Merge(ctx); err != nil {
		t.Fatal(err)
	}
	closeWS(t, ws)
	hostClean(t, r.Root)
}

func TestGitMountsWhenHostIsLinkedWorktree(t *testing.T) {
	t.Parallel()
	primary := newRepo(t)
	linked := filepath.Join(t.TempDir(), "linked")
	git(t, primary.Root, "worktree", "add", "--quiet", "-b", "feature", linked)
	r, err := Open(ctx, linked)
	if err != nil {
		t.Fatal(err)
	}
	if r.CommonDir != primary.CommonDir || r.GitDir == r.CommonDir {
		t.Fatalf("repo %+v", r)
	}
	ws := prepare(t, r, Strategy{}, sdk.ContractBindMount, "head")
	defer closeWS(t, ws)
	if ws.Dir != linked || ws.Branch != "feature" {
		t.Fatalf("got %+v", ws)
	}
	var paths []string
	for _, m := range ws.GitMounts {
		paths = append(paths, m.HostPath)
	}
	if len(paths) == 0 || paths[0] != r.GitDir || !strings.HasPrefix(paths[1], primary.CommonDir) {
		t.Fatalf("mounts %v", paths)
	}
}
