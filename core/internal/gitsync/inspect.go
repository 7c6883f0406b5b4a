package gitsync

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// Pending is what SyncOut would bring back from a sandbox.
type Pending struct {
	// Synced is false when the sandbox's RepoPath holds no clone with a
	// HEAD (the run ended before or during SyncIn): there is nothing to
	// bring back and the other fields are empty.
	Synced bool
	// Head is the sandbox's HEAD commit.
	Head string
	// Commits are Base..Head in the sandbox, oldest first.
	Commits []worktree.Commit
	// Dirty: the sandbox has uncommitted work (staged, unstaged or
	// untracked files, ignored ones excluded) that SyncOut saves as a patch.
	Dirty bool
}

// Inspect reports what SyncOut would bring back from sb, changing nothing
// in the sandbox or on the host (`sanddune gc --dry-run`, and gc's check
// whether a sandbox holds unsynced work at all).
func Inspect(ctx context.Context, sb sdk.Sandbox, spec Spec) (Pending, error) {
	var p Pending
	if spec.Base == "" {
		return p, errors.New("inspect: base is required")
	}
	s := sandbox{sb}
	// Look for a repository at RepoPath only, not in a directory above it.
	env := map[string]string{"GIT_OPTIONAL_LOCKS": "0"}
	if repo := sb.Info().RepoPath; repo != "" {
		env["GIT_CEILING_DIRECTORIES"] = path.Dir(repo)
	}
	if _, err := s.git(ctx, env, "rev-parse", "--absolute-git-dir"); err != nil {
		if exitCode(err) > 0 {
			return p, nil // not a git repository
		}
		return p, fmt.Errorf("inspect: %w", err)
	}
	head, err := s.git(ctx, env, "rev-parse", "--verify", "--quiet", "HEAD")
	if exitCode(err) > 0 {
		return p, nil // unborn HEAD: the sync-in did not finish
	}
	if err != nil {
		return p, fmt.Errorf("inspect: %w", err)
	}
	p.Synced, p.Head = true, head
	log, err := s.git(ctx, env, "log", "--reverse", "--format=%H%x00%an%x00%ae%x00%s%x1e", spec.Base+"..HEAD", "--")
	if err != nil {
		return p, fmt.Errorf("inspect: %w", err)
	}
	for _, rec := range strings.Split(log, "\x1e") {
		f := strings.Split(strings.TrimLeft(rec, "\n"), "\x00")
		if len(f) == 4 {
			p.Commits = append(p.Commits, worktree.Commit{SHA: f[0], Author: f[1], AuthorEmail: f[2], Subject: f[3]})
		}
	}
	status, err := s.git(ctx, env, "status", "--porcelain")
	if err != nil {
		return p, fmt.Errorf("inspect: %w", err)
	}
	p.Dirty = strings.TrimSpace(status) != ""
	return p, nil
}
