package gc

import (
	"context"
	"errors"
	"fmt"

	"github.com/missingstudio/sanddune/core/internal/gitsync"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// salvage brings the unsynced work of an orphaned isolated sandbox back to
// its repository, then removes it; a sandbox whose work cannot be
// salvaged is kept (removed with Force).
func salvage(ctx context.Context, p sdk.SandboxProvider, rl resources, s *Sandbox, opts Options) {
	l := s.Resource.Labels
	spec := gitsync.Spec{HostRepo: l[LabelRepo], Branch: l[LabelBranch], Base: l[LabelBase], RunName: s.Run()}
	for _, k := range []string{LabelRepo, LabelBranch, LabelBase} {
		if l[k] == "" {
			unsalvageable(ctx, rl, s, opts, "its labels do not say where its work belongs (no "+k+
				" label: made by an older sanddune), so it may hold work that was never synced out")
			return
		}
	}
	repo, err := worktree.Open(ctx, spec.HostRepo)
	if err != nil {
		unsalvageable(ctx, rl, s, opts, fmt.Sprintf("its repository %s cannot be opened (%v), so its work has nowhere to go", spec.HostRepo, err))
		return
	}
	rec, ok := p.(sdk.SandboxRecoverer)
	var sb sdk.Sandbox
	if ok {
		sb, err = rec.Recover(ctx, rl.cfg, s.Resource.ID)
	}
	if !ok || errors.Is(err, sdk.ErrNotSupported) {
		unsalvageable(ctx, rl, s, opts, "provider "+s.Provider+" cannot reattach to it (no Recover), so it may hold work that was never synced out")
		return
	}
	if err != nil {
		failed(ctx, rl, s, opts, fmt.Errorf("reattaching to it: %w", err))
		return
	}
	defer sb.Close(context.WithoutCancel(ctx)) // leaves the resource
	repoPath := sb.Info().RepoPath
	s.Inspect = fmt.Sprintf("its repository is %s in the sandbox: `git -C %s log --oneline %s..HEAD` and `git -C %s status` show the work",
		repoPath, repoPath, spec.Base, repoPath)

	// Lock the run's branch: a live run on it would race with the salvage.
	key := "branch " + spec.Branch
	switch {
	case opts.Run != "": // the run holds it
	case opts.DryRun:
		if h, err := repo.Holder(key); err != nil || h != nil {
			keep(s, lockReason(spec.Branch, h, err))
			return
		}
	default:
		lock, err := repo.Lock(key, "sanddune gc")
		if err != nil {
			var le *worktree.LockedError
			if errors.As(err, &le) {
				keep(s, lockReason(spec.Branch, &le.Holder, nil))
			} else {
				keep(s, lockReason(spec.Branch, nil, err))
			}
			return
		}
		defer lock.Release()
	}

	pending, err := gitsync.Inspect(ctx, sb, spec)
	if err != nil {
		failed(ctx, rl, s, opts, err)
		return
	}
	if !pending.Synced || len(pending.Commits) == 0 && !pending.Dirty {
		s.Inspect = ""
		remove(ctx, rl, s, opts) // nothing unsynced
		return
	}
	s.Salvage = &Salvage{Repo: repo.Root, Branch: spec.Branch, Commits: pending.Commits, Dirty: pending.Dirty}
	if opts.DryRun {
		s.Action = WouldRemove
		return
	}
	if err := ensureBranch(ctx, repo, spec); err != nil {
		failed(ctx, rl, s, opts, err)
		return
	}
	out, err := gitsync.SyncOut(ctx, sb, spec)
	s.Salvage.PatchPath = out.PatchPath
	if out.Commits != nil {
		s.Salvage.Commits = out.Commits
	}
	var rescue *gitsync.RescueError
	if errors.As(err, &rescue) {
		s.Salvage.Branch, s.Salvage.RescueBranch, err = rescue.RescueBranch, rescue.RescueBranch, nil
	}
	if err != nil {
		failed(ctx, rl, s, opts, err)
		return
	}
	s.Salvage.Landed = true
	s.Inspect = ""
	remove(ctx, rl, s, opts)
}

// ensureBranch recreates the run's branch at its base when it was deleted
// meanwhile (e.g. a temporary branch), so the commits have a home.
func ensureBranch(ctx context.Context, repo *worktree.Repo, spec gitsync.Spec) error {
	ref := "refs/heads/" + spec.Branch
	if _, err := repo.Git(ctx, "rev-parse", "--verify", "--quiet", ref); err == nil {
		return nil
	}
	if _, err := repo.Git(ctx, "update-ref", "-m", "sanddune gc: salvage of run "+spec.RunName, ref, spec.Base, ""); err != nil {
		return fmt.Errorf("recreating branch %s at the run's base %s: %w", spec.Branch, spec.Base, err)
	}
	return nil
}

func lockReason(branch string, h *worktree.LockInfo, err error) string {
	if err != nil {
		return fmt.Sprintf("its branch %s cannot be locked (%v); run `sanddune gc` again", branch, err)
	}
	return fmt.Sprintf("its branch %s is in use by run %s (pid %d); run `sanddune gc` again once it ends", branch, h.Run, h.PID)
}

func keep(s *Sandbox, reason string) {
	s.Action, s.Reason = Kept, reason
}

// unsalvageable keeps a sandbox whose work gc cannot reach; Force removes
// it.
func unsalvageable(ctx context.Context, rl resources, s *Sandbox, opts Options, reason string) {
	if !opts.Force {
		keep(s, reason+"; `sanddune gc --force` removes it with anything in it")
		return
	}
	remove(ctx, rl, s, opts)
	if s.Action != Failed {
		s.Reason = reason + " (--force)"
	}
}

// failed keeps a sandbox whose salvage failed; Force removes it.
func failed(ctx context.Context, rl resources, s *Sandbox, opts Options, err error) {
	s.SalvageFailed = true
	unsalvageable(ctx, rl, s, opts, "salvaging its work failed: "+err.Error())
}
