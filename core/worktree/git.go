package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// noConfigWrites are passed to every git command that could create a branch
// or otherwise record upstream config in the repo's config file.
var noConfigWrites = []string{"-c", "branch.autoSetupMerge=false", "-c", "push.autoSetupRemote=false"}

// droppedEnv are inherited variables that would point git at another
// repository or index than the one we name.
var droppedEnv = map[string]bool{
	"GIT_DIR": true, "GIT_WORK_TREE": true, "GIT_INDEX_FILE": true, "GIT_COMMON_DIR": true,
	"GIT_OBJECT_DIRECTORY": true, "GIT_ALTERNATE_OBJECT_DIRECTORIES": true, "GIT_NAMESPACE": true,
	"GIT_PREFIX": true, "GIT_QUARANTINE_PATH": true, "LC_ALL": true, "GIT_TERMINAL_PROMPT": true,
	"GIT_OPTIONAL_LOCKS": true, "GIT_REFLOG_ACTION": true,
}

// GitError is a failed git command.
type GitError struct {
	Dir      string
	Args     []string
	ExitCode int // -1 when git did not run or was killed
	Stderr   string
	Err      error
}

func (e *GitError) Error() string {
	msg := strings.TrimSpace(e.Stderr)
	if msg == "" {
		msg = e.Err.Error()
	}
	return fmt.Sprintf("git %s: %s", strings.Join(e.Args, " "), msg)
}

func (e *GitError) Unwrap() error { return e.Err }

// exitCode returns the exit code of a failed git command, or -1.
func exitCode(err error) int {
	var ge *GitError
	if errors.As(err, &ge) {
		return ge.ExitCode
	}
	return -1
}

// ErrGitMissing is git not found on PATH: sanddune needs it for every run.
var ErrGitMissing = errors.New("git is not installed or not on PATH: sanddune needs git (install it, e.g. apt-get install git, or fix PATH)")

// Git runs `git args...` in dir and returns its stdout without trailing
// newlines. A non-zero exit is a *GitError carrying stderr.
func Git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitCmd{dir: dir}.run(ctx, args...)
}

// gitCmd is one git invocation with extra environment or stdin.
type gitCmd struct {
	dir   string
	env   []string // KEY=VALUE added to the environment
	stdin io.Reader
}

func (g gitCmd) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	// On cancellation, let git remove its lock files and half-made
	// worktrees (it does on SIGTERM, not on SIGKILL).
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = g.dir
	cmd.Env = gitEnv(g.env)
	cmd.Stdin = g.stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	out := strings.TrimRight(stdout.String(), "\n")
	if errors.Is(err, exec.ErrNotFound) {
		return "", ErrGitMissing
	}
	if err != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return out, &GitError{Dir: g.dir, Args: args, ExitCode: code, Stderr: tail(stderr.String(), 8<<10), Err: err}
	}
	return out, nil
}

func gitEnv(extra []string) []string {
	env := make([]string, 0, len(os.Environ())+len(extra)+3)
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !droppedEnv[k] {
			env = append(env, kv)
		}
	}
	env = append(env, "LC_ALL=C", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	return append(env, extra...)
}

// tail keeps the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
