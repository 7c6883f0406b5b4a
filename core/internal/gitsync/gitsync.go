package gitsync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/missingstudio/sanddune/core/internal/tempdir"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// Spec names what a sync moves.
type Spec struct {
	// HostRepo is the host repository root.
	HostRepo string
	// Branch is the host branch: checked out in the sandbox by SyncIn,
	// fast-forwarded to the sandbox's HEAD by SyncOut.
	Branch string
	// Base is the commit the run started from (Branch's tip at SyncIn).
	Base string
	// RunName names the patch file of uncommitted work.
	RunName string
	// AuthorName and AuthorEmail are the host's identity
	// (worktree.Repo.Identity), set in the sandbox repo where its git has
	// none.
	AuthorName, AuthorEmail string
	// CommitsOnly leaves uncommitted work in the sandbox (no patch): a
	// later run there continues it.
	CommitsOnly bool
}

// OutResult is what SyncOut brought back.
type OutResult struct {
	// Head is the sandbox's HEAD commit.
	Head string
	// Commits are Base..Head, oldest first, as they now exist on the host.
	Commits []worktree.Commit
	// PatchPath is the saved uncommitted work, or "" when there was none.
	PatchPath string
}

// RescueError says the sandbox's commits could not fast-forward Branch
// (it moved on the host); they are on RescueBranch instead.
type RescueError struct {
	Branch       string
	RescueBranch string
	Commits      []worktree.Commit
	// Worktree, when set, has Branch checked out and is why it did not
	// move: a tree of the user's, whose files sanddune does not change, or
	// one of sanddune's (Managed) with uncommitted changes in the way.
	Worktree string
	Managed  bool
}

func (e *RescueError) Error() string {
	kept := fmt.Sprintf("the sandbox's %d commit(s) are kept on branch %s", len(e.Commits), e.RescueBranch)
	switch {
	case e.Worktree != "" && e.Managed:
		return fmt.Sprintf("the worktree of branch %s at %s has uncommitted changes in the way; %s: merge them there "+
			"with `git -C %s merge %s` once those changes are committed or stashed", e.Branch, e.Worktree, kept, e.Worktree, e.RescueBranch)
	case e.Worktree != "":
		return fmt.Sprintf("branch %s is checked out in %s, whose files sanddune does not change; %s: merge them there "+
			"with `git -C %s merge %s`", e.Branch, e.Worktree, kept, e.Worktree, e.RescueBranch)
	}
	return fmt.Sprintf("branch %s moved on the host during the run and cannot be fast-forwarded to the sandbox's "+
		"%d commit(s); they are kept on branch %s: merge them by hand with `git merge %s`",
		e.Branch, len(e.Commits), e.RescueBranch, e.RescueBranch)
}

// SyncIn makes the sandbox's RepoPath a clone of the host repo checked out
// on spec.Branch at spec.Base.
func SyncIn(ctx context.Context, sb sdk.Sandbox, spec Spec) error {
	if spec.Branch == "" || spec.Base == "" {
		return errors.New("sync in: branch and base are required")
	}
	ref := "refs/heads/" + spec.Branch
	tip, err := worktree.Git(ctx, spec.HostRepo, "rev-parse", "--verify", "--quiet", ref)
	if err != nil {
		return fmt.Errorf("sync in: branch %s: %w", spec.Branch, err)
	}
	if tip != spec.Base {
		return fmt.Errorf("sync in: branch %s is at %s, not at the run's base %s", spec.Branch, tip, spec.Base)
	}
	tmp, err := tempdir.Make("sync")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bundle := filepath.Join(tmp, "in.bundle")
	if _, err := worktree.Git(ctx, spec.HostRepo, "bundle", "create", "--quiet", bundle, ref); err != nil {
		return fmt.Errorf("sync in: %w", err)
	}

	s := sandbox{sb}
	if _, err := s.git(ctx, nil, "init", "--quiet"); err != nil {
		return fmt.Errorf("sync in: %w", err)
	}
	if _, err := s.git(ctx, nil, "symbolic-ref", "HEAD", ref); err != nil {
		return fmt.Errorf("sync in: %w", err)
	}
	gitDir, err := s.git(ctx, nil, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return fmt.Errorf("sync in: %w", err)
	}
	sbBundle := path.Join(gitDir, "sanddune-in.bundle")
	if err := sb.CopyIn(ctx, bundle, sbBundle); err != nil {
		return fmt.Errorf("sync in: copying the bundle into the sandbox: %w", err)
	}
	defer s.rm(ctx, sbBundle)
	if _, err := s.git(ctx, nil, "fetch", "--quiet", "--no-tags", "--update-head-ok", sbBundle, "+"+ref+":"+ref); err != nil {
		return fmt.Errorf("sync in: %w", err)
	}
	if _, err := s.git(ctx, nil, "reset", "--quiet", "--hard", "HEAD"); err != nil {
		return fmt.Errorf("sync in: %w", err)
	}
	head, err := s.git(ctx, nil, "rev-parse", "HEAD")
	if err != nil {
		return fmt.Errorf("sync in: %w", err)
	}
	if head != spec.Base {
		return fmt.Errorf("sync in: HEAD mismatch after sync: host %s, sandbox %s", spec.Base, head)
	}
	return setIdentity(ctx, s, spec)
}

// setIdentity sets user.name/user.email in the sandbox repo, from the
// host's author identity, where the sandbox's git has none.
func setIdentity(ctx context.Context, s sandbox, spec Spec) error {
	if spec.AuthorName == "" || spec.AuthorEmail == "" {
		return nil // the host has no identity to pass on
	}
	for key, val := range map[string]string{"user.name": spec.AuthorName, "user.email": spec.AuthorEmail} {
		if _, err := s.git(ctx, nil, "config", key); err == nil || exitCode(err) != 1 {
			continue
		}
		if _, err := s.git(ctx, nil, "config", "--local", key, val); err != nil {
			return fmt.Errorf("sync in: %w", err)
		}
	}
	return nil
}

// SyncOut saves the sandbox's uncommitted work as a patch and brings its
// commits Base..HEAD onto spec.Branch in the host repo. The result is
// filled as far as it got, also on error.
func SyncOut(ctx context.Context, sb sdk.Sandbox, spec Spec) (OutResult, error) {
	var res OutResult
	s := sandbox{sb}
	head, err := s.git(ctx, nil, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return res, fmt.Errorf("sync out: %w", err)
	}
	res.Head = head
	gitDir, err := s.git(ctx, nil, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return res, fmt.Errorf("sync out: %w", err)
	}
	// A sync out that was killed half-way (sanddune killed, then gc) left
	// its temporary files, and git's locks on them, behind.
	sbBundle := path.Join(gitDir, "sanddune-out.bundle")
	index := path.Join(gitDir, "sanddune-out.index")
	if _, err := s.run(ctx, nil, "rm", "-f", "--", sbBundle, sbBundle+".lock", index, index+".lock", path.Join(gitDir, "sanddune-out.patch")); err != nil {
		return res, fmt.Errorf("sync out: removing what an interrupted sync out left: %w", err)
	}
	stamp := worktree.Stamp(time.Now())
	if !spec.CommitsOnly {
		if res.PatchPath, err = savePatch(ctx, s, gitDir, spec, stamp); err != nil {
			return res, fmt.Errorf("sync out: saving uncommitted changes: %w", err)
		}
	}
	count, err := s.git(ctx, nil, "rev-list", "--count", spec.Base+"..HEAD")
	if err != nil {
		return res, fmt.Errorf("sync out: %w", err)
	}
	if count == "0" {
		return res, nil
	}

	defer s.rm(ctx, sbBundle)
	if _, err := s.git(ctx, nil, "bundle", "create", "--quiet", sbBundle, spec.Base+"..HEAD"); err != nil {
		return res, fmt.Errorf("sync out: %w", err)
	}
	tmp, err := tempdir.Make("sync")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(tmp)
	bundle := filepath.Join(tmp, "out.bundle")
	if err := sb.CopyOut(ctx, sbBundle, bundle); err != nil {
		return res, fmt.Errorf("sync out: copying the bundle out of the sandbox: %w", err)
	}
	host := spec.HostRepo
	// Fetch the objects without touching any ref, then move the branch.
	if _, err := worktree.Git(ctx, host, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", bundle, "HEAD"); err != nil {
		return res, fmt.Errorf("sync out: %w", err)
	}
	repo, err := worktree.Open(ctx, host)
	if err != nil {
		return res, fmt.Errorf("sync out: %w", err)
	}
	if res.Commits, err = repo.Commits(ctx, spec.Base, head); err != nil {
		return res, fmt.Errorf("sync out: %w", err)
	}
	ref := "refs/heads/" + spec.Branch
	old, err := repo.Tip(ctx, spec.Branch)
	if err != nil {
		return res, fmt.Errorf("sync out: branch %s: %w", spec.Branch, err)
	}
	if old == head {
		return res, nil
	}
	reflog := "sanddune: sync out of run " + spec.RunName
	// A branch checked out in a worktree of sanddune's (core.CreateWorktree)
	// moves with its files; one checked out in a tree of the user's is
	// never moved under it (its files would no longer match).
	dir, managed, err := repo.CheckedOut(ctx, spec.Branch)
	if err != nil {
		return res, fmt.Errorf("sync out: %w", err)
	}
	re := &RescueError{Branch: spec.Branch, Commits: res.Commits}
	if ff, _ := repo.IsAncestor(ctx, old, head, res.Commits); ff {
		switch {
		case dir == "":
			if _, err := worktree.Git(ctx, host, "update-ref", "-m", reflog, ref, head, old); err == nil {
				return res, nil
			}
		case managed:
			if _, err := worktree.Git(ctx, dir, "-c", "core.hooksPath=/dev/null", "merge", "--ff-only", "--quiet", head); err == nil {
				return res, nil
			}
			re.Worktree, re.Managed = dir, true
		default:
			re.Worktree = dir
		}
	}
	re.RescueBranch = "sanddune/rescue/" + worktree.SanitizeName(spec.RunName) + "/" + stamp
	if _, err := worktree.Git(ctx, host, "update-ref", "-m", reflog, "refs/heads/"+re.RescueBranch, head, ""); err != nil {
		return res, fmt.Errorf("sync out: %w", err)
	}
	return res, re
}

// savePatch writes the sandbox's uncommitted changes to the host patch
// dir and returns the host path, or "" when there are none.
func savePatch(ctx context.Context, s sandbox, gitDir string, spec Spec, stamp string) (string, error) {
	index := path.Join(gitDir, "sanddune-out.index")
	patch := path.Join(gitDir, "sanddune-out.patch")
	defer s.rm(ctx, index, patch)
	env := map[string]string{"GIT_INDEX_FILE": index}
	// Start from a copy of the real index (keeps stat data: no rehashing).
	if _, err := s.run(ctx, nil, "cp", path.Join(gitDir, "index"), index); err != nil {
		if _, err := s.git(ctx, env, "read-tree", "HEAD"); err != nil {
			return "", err
		}
	}
	if _, err := s.git(ctx, env, "add", "--all"); err != nil {
		return "", err
	}
	if _, err := s.git(ctx, env, "diff", "--cached", "--quiet", "HEAD"); err == nil {
		return "", nil
	} else if exitCode(err) != 1 {
		return "", err
	}
	if _, err := s.git(ctx, env, "diff", "--cached", "--binary", "--full-index", "--no-color", "--no-ext-diff",
		"--output="+patch, "HEAD"); err != nil {
		return "", err
	}
	dir := filepath.Join(spec.HostRepo, worktree.StateDirName, "patches")
	if err := worktree.EnsureIgnoredDir(dir); err != nil {
		return "", err
	}
	host := filepath.Join(dir, worktree.SanitizeName(spec.RunName)+"-"+stamp+".patch")
	if err := s.sb.CopyOut(ctx, patch, host); err != nil {
		return "", fmt.Errorf("copying the patch out of the sandbox: %w", err)
	}
	return host, nil
}

// sandbox runs commands in an sdk.Sandbox.
type sandbox struct{ sb sdk.Sandbox }

// execError is a failed sandbox command.
type execError struct {
	argv     []string
	exitCode int
	stderr   string
}

func (e *execError) Error() string {
	return fmt.Sprintf("sandbox: %s: exit %d: %s", strings.Join(e.argv, " "), e.exitCode, strings.TrimSpace(e.stderr))
}

func exitCode(err error) int {
	var ee *execError
	if errors.As(err, &ee) {
		return ee.exitCode
	}
	return -1
}

func (s sandbox) git(ctx context.Context, env map[string]string, args ...string) (string, error) {
	return s.run(ctx, env, append([]string{"git"}, args...)...)
}

// run execs argv and returns stdout without trailing newlines; a non-zero
// exit is an *execError with the stderr tail.
func (s sandbox) run(ctx context.Context, env map[string]string, argv ...string) (string, error) {
	e := map[string]string{"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}
	for k, v := range env {
		e[k] = v
	}
	var stdout, stderr bytes.Buffer
	res, err := s.sb.Exec(ctx, sdk.ExecRequest{Argv: argv, Env: e}, func(l sdk.OutputLine) {
		b := &stdout
		if l.Stream == sdk.Stderr {
			b = &stderr
			if stderr.Len() > 8<<10 {
				return
			}
		}
		b.Write(l.Text)
		if !l.Partial {
			b.WriteByte('\n')
		}
	})
	if err != nil {
		return "", fmt.Errorf("sandbox: %s: %w", strings.Join(argv, " "), err)
	}
	out := strings.TrimRight(stdout.String(), "\n")
	if res.ExitCode != 0 || res.TimedOut {
		return out, &execError{argv: argv, exitCode: res.ExitCode, stderr: stderr.String()}
	}
	return out, nil
}

// rm removes temporary files in the sandbox, best effort.
func (s sandbox) rm(ctx context.Context, paths ...string) {
	_, _ = s.run(context.WithoutCancel(ctx), nil, append([]string{"rm", "-f", "--"}, paths...)...)
}
