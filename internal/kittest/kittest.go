// Package kittest holds test helpers for sandbox provider plugins: engine
// checks that skip locally and fail in CI, an Exec output collector, a
// process reaper check, file helpers for copy tests, a git repository
// with a linked worktree laid out the way sanddune hands one to bind-mount
// sandboxes, and tests run again as an ordinary user.
package kittest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/missingstudio/sanddune/sdk"
)

// RequireEnginesEnv, set to 1 (as in CI), turns RequireEngine's skips into
// failures.
const RequireEnginesEnv = "SANDDUNE_REQUIRE_ENGINES"

// RequireEngine stops the test when an engine it needs (a daemon, a binary,
// kernel support) is unavailable, that is when err is not nil: the test
// fails under SANDDUNE_REQUIRE_ENGINES=1 and is skipped, loudly, otherwise.
func RequireEngine(t testing.TB, engine string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	msg := strings.ToUpper(engine) + " ENGINE TESTS NOT RUN: " + err.Error()
	if os.Getenv(RequireEnginesEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Output collects an Exec's output. It is safe for concurrent use.
type Output struct {
	mu sync.Mutex
	// Stdout and Stderr hold the lines (pieces of long lines separately).
	Stdout, Stderr []string
	// Pieces holds everything received, in order.
	Pieces []sdk.OutputLine
}

// Add is an sdk.OutputFunc.
func (o *Output) Add(l sdk.OutputLine) {
	o.mu.Lock()
	defer o.mu.Unlock()
	text := string(l.Text)
	if l.Stream == sdk.Stderr {
		o.Stderr = append(o.Stderr, text)
	} else {
		o.Stdout = append(o.Stdout, text)
	}
	o.Pieces = append(o.Pieces, sdk.OutputLine{Stream: l.Stream, Text: []byte(text), Partial: l.Partial})
}

// Exec runs req in sb and returns its result and output; an error fails
// the test.
func Exec(t testing.TB, sb sdk.Sandbox, req sdk.ExecRequest) (sdk.ExecResult, *Output) {
	t.Helper()
	o := &Output{}
	res, err := sb.Exec(context.Background(), req, o.Add)
	if err != nil {
		t.Fatalf("Exec(%q, %q): %v", req.Argv, req.Shell, err)
	}
	return res, o
}

// WaitGone waits until the process pid no longer runs, and fails the test
// (killing it) when it still does after 10s. A zombie counts as gone: it
// waits for a reaper that may not exist in a container.
func WaitGone(t testing.TB, pid int) {
	t.Helper()
	for range 200 {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:])); len(f) > 0 && f[0] == "Z" {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("process %d still running", pid)
}

// WriteFile writes a file with exactly mode, creating its parents.
func WriteFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	must(t, os.WriteFile(path, []byte(content), mode))
	must(t, os.Chmod(path, mode))
}

// CheckFile checks that path is a regular file (not a symlink) with
// content and mode.
func CheckFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Error(err)
		return
	}
	data, _ := os.ReadFile(path)
	if !fi.Mode().IsRegular() || string(data) != content || fi.Mode().Perm() != mode {
		t.Errorf("%s: mode %v content %q, want regular %v %q", path, fi.Mode(), data, mode, content)
	}
}

// Git runs git in dir with a fixed identity, no system or global config and
// LC_ALL=C, and returns its trimmed output; an error fails the test.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=T", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Worktree is a repository with a linked worktree.
type Worktree struct {
	// Repo is the main repository: branch main with one commit,
	// "initial", adding README.
	Repo string
	// Path is the linked worktree, Repo/.sanddune/worktrees/w1, on branch
	// Branch (agent/w1).
	Path, Branch string
	// GitMounts are the git metadata paths the worktree needs, as the host
	// puts them in CreateRequest.GitMounts: its gitdir, objects, refs and
	// logs read-write; HEAD, config and the optional files read-only.
	GitMounts []sdk.Mount
}

// NewWorktree creates dir/repo with a linked worktree.
func NewWorktree(t testing.TB, dir string) Worktree {
	t.Helper()
	w := Worktree{Repo: filepath.Join(dir, "repo"), Branch: "agent/w1"}
	must(t, os.MkdirAll(w.Repo, 0o755))
	Git(t, w.Repo, "init", "-q")
	must(t, os.WriteFile(filepath.Join(w.Repo, "README"), []byte("hi\n"), 0o644))
	Git(t, w.Repo, "add", "README")
	Git(t, w.Repo, "commit", "-q", "-m", "initial")
	w.Path = filepath.Join(w.Repo, ".sanddune", "worktrees", "w1")
	Git(t, w.Repo, "worktree", "add", "-q", "-b", w.Branch, w.Path)

	common := filepath.Join(w.Repo, ".git")
	must(t, os.MkdirAll(filepath.Join(common, "logs"), 0o755))
	w.GitMounts = []sdk.Mount{{HostPath: filepath.Join(common, "worktrees", "w1")}}
	for _, n := range []string{"objects", "refs", "logs"} {
		w.GitMounts = append(w.GitMounts, sdk.Mount{HostPath: filepath.Join(common, n)})
	}
	for _, n := range []string{"HEAD", "config", "packed-refs", "shallow", "info"} {
		if p := filepath.Join(common, n); exists(p) {
			w.GitMounts = append(w.GitMounts, sdk.Mount{HostPath: p, ReadOnly: true})
		}
	}
	for i := range w.GitMounts {
		w.GitMounts[i].SandboxPath = w.GitMounts[i].HostPath
	}
	return w
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }
