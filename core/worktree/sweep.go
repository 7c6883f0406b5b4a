package worktree

import (
	"context"
	"errors"
	"os"
	"path/filepath"
)

// Swept is what Sweep did (or would do) with one entry of
// .sanddune/worktrees.
type Swept struct {
	Path string
	// Action is "removed", "would remove", "kept (uncommitted work)",
	// "kept (in use by a run)" or "kept (<error>)".
	Action string
}

// Sweep cleans up worktrees that runs left in .sanddune/worktrees: a clean
// worktree no live run holds is removed; a dirty one is kept, because it
// holds someone's uncommitted work; one locked by a live run is left alone.
// With dryRun nothing changes.
func (r *Repo) Sweep(ctx context.Context, dryRun bool) ([]Swept, error) {
	if !dryRun {
		if _, err := r.adminGit(ctx, "worktree", "prune"); err != nil {
			return nil, err
		}
	}
	root := r.StateDir("worktrees")
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Swept
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		out = append(out, Swept{Path: dir, Action: r.sweepOne(ctx, dir, dryRun)})
	}
	return out, nil
}

func (r *Repo) sweepOne(ctx context.Context, dir string, dryRun bool) string {
	key := "worktree " + dir
	if dryRun { // look only
		if h, err := r.Holder(key); err != nil || h != nil {
			return "kept (" + lockProblem(h, err) + ")"
		}
	} else {
		lock, err := r.Lock(key, "sanddune gc")
		var held *LockedError
		if errors.As(err, &held) {
			return "kept (" + lockProblem(&held.Holder, nil) + ")"
		}
		if err != nil {
			return "kept (" + err.Error() + ")"
		}
		defer lock.Release()
	}
	dirty, err := Dirty(ctx, dir)
	if err != nil {
		return "kept (" + err.Error() + ")"
	}
	if dirty {
		return "kept (uncommitted work)"
	}
	if dryRun {
		return "would remove"
	}
	if err := r.removeWorktree(ctx, dir); err != nil {
		return "kept (" + err.Error() + ")"
	}
	return "removed"
}
