package worktree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/missingstudio/sanddune/core/internal/gittest"
	"github.com/missingstudio/sanddune/sdk"
)

func TestMain(m *testing.M) {
	if v := os.Getenv(holdLockEnv); v != "" {
		root, key, _ := strings.Cut(v, "|")
		holdLock(root, key)
	}
	gittest.Main(m)
}

// git runs git in dir and fails the test on error.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := Git(context.Background(), dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// gitEnvRun runs git with extra env (KEY=VALUE).
func gitWithEnv(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	out, err := gitCmd{dir: dir, env: env}.run(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// commitFile writes file in dir and commits it; it returns the sha.
func commitFile(t testing.TB, dir, file, content, msg string) string {
	t.Helper()
	writeFile(t, filepath.Join(dir, file), content)
	git(t, dir, "add", "--", file)
	git(t, dir, "commit", "--quiet", "-m", msg)
	return git(t, dir, "rev-parse", "HEAD")
}

// newRepo creates a repo on branch main with one commit (README, a.txt).
func newRepo(t testing.TB) *Repo {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "--quiet", "-b", "main")
	writeFile(t, filepath.Join(dir, "a.txt"), "a\n")
	git(t, dir, "add", "a.txt")
	commitFile(t, dir, "README", "hello\n", "initial")
	r, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// hostClean fails unless the host tree is clean and not mid-merge.
func hostClean(t testing.TB, dir string) {
	t.Helper()
	if st := git(t, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Fatalf("host repo not clean:\n%s", st)
	}
	gitDir := git(t, dir, "rev-parse", "--absolute-git-dir")
	for _, f := range []string{"MERGE_HEAD", "CHERRY_PICK_HEAD", "REBASE_HEAD"} {
		if _, err := os.Stat(filepath.Join(gitDir, f)); err == nil {
			t.Fatalf("host repo has %s", f)
		}
	}
}

func prepare(t testing.TB, r *Repo, s Strategy, contract sdk.Contract, run string) *Workspace {
	t.Helper()
	ws, err := tryPrepare(r, s, contract, run)
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

func tryPrepare(r *Repo, s Strategy, contract sdk.Contract, run string) (*Workspace, error) {
	ctx := context.Background()
	host, err := r.CurrentBranch(ctx)
	if err != nil {
		return nil, err
	}
	plan, err := Resolve(s, contract, host, false)
	if err != nil {
		return nil, err
	}
	return Prepare(ctx, r, plan, PrepareOptions{RunName: run})
}

func closeWS(t testing.TB, ws *Workspace) CloseResult {
	t.Helper()
	res, err := ws.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func subjects(cs []Commit) string {
	var s []string
	for _, c := range cs {
		s = append(s, c.Subject)
	}
	return strings.Join(s, ",")
}

// deadPID returns the pid of a process that has exited.
func deadPID(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}
