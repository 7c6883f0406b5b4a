package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Holder returns the holder of the lock on key when a live process holds
// it, and nil when the key is free or its lock is stale. Unlike Lock it
// changes nothing.
func (r *Repo) Holder(key string) (*LockInfo, error) {
	held, err := readLock(filepath.Join(r.LockDir(), lockFileName(key)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if isStale(held) {
		return nil, nil
	}
	return &held, nil
}

// SweptLock is what SweepLocks did (or would do) with one lock file.
type SweptLock struct {
	Path string
	Info LockInfo
	// Action is "removed", "would remove" or "kept (<error>)".
	Action string
}

// SweepLocks removes the lock files whose process is certainly gone (same
// host: pid dead or reused, or the machine rebooted). Locks of live
// processes, of other hosts and unreadable ones stay. With dryRun nothing
// changes.
func (r *Repo) SweepLocks(dryRun bool) ([]SweptLock, error) {
	dir := r.LockDir()
	paths, err := filepath.Glob(filepath.Join(dir, "*.lock"))
	if err != nil {
		return nil, err
	}
	var out []SweptLock
	for _, p := range paths {
		held, err := readLock(p)
		if err != nil || !isStale(held) {
			continue
		}
		s := SweptLock{Path: p, Info: held, Action: "would remove"}
		if !dryRun {
			s.Action = "removed"
			if err := breakStale(dir, p, held); err != nil {
				s.Action = "kept (" + err.Error() + ")"
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// tempBranch matches the temporary branches of merge-to-head runs,
// sanddune/<run>/<Stamp>.
var tempBranch = regexp.MustCompile(`^sanddune/[^/]+/[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$`)

// IsTempBranch reports whether branch is named like the temporary branch
// of a merge-to-head run.
func IsTempBranch(branch string) bool { return tempBranch.MatchString(branch) }

// SweptBranch is what SweepBranches did (or would do) with one temporary
// branch.
type SweptBranch struct {
	Branch string
	// Action is "deleted", "would delete" or "kept (<why>)".
	Action string
}

// SweepBranches deletes the temporary branches of merge-to-head runs
// (sanddune/<run>/<stamp>) that hold nothing: no live run locks the
// branch, no worktree has it checked out, it is not in keep, and its tip is
// in another local branch. keep maps branches to leave alone to the
// reason. The others are reported as kept. With dryRun nothing changes.
func (r *Repo) SweepBranches(ctx context.Context, dryRun bool, keep map[string]string) ([]SweptBranch, error) {
	refs, err := r.Git(ctx, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(worktreepath)", "refs/heads/sanddune/")
	if err != nil {
		return nil, err
	}
	var out []SweptBranch
	for _, line := range strings.Split(refs, "\n") {
		f := strings.Split(line, "\x00")
		if len(f) != 3 {
			continue
		}
		name := strings.TrimPrefix(f[0], "refs/heads/")
		if !IsTempBranch(name) {
			continue
		}
		out = append(out, SweptBranch{Branch: name, Action: r.sweepBranch(ctx, name, f[1], f[2], dryRun, keep)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Branch < out[j].Branch })
	return out, nil
}

func (r *Repo) sweepBranch(ctx context.Context, name, tip, worktree string, dryRun bool, keep map[string]string) string {
	if why, ok := keep[name]; ok {
		return "kept (" + why + ")"
	}
	if worktree != "" {
		return "kept (checked out in " + worktree + ")"
	}
	key := "branch " + name
	if dryRun {
		if h, err := r.Holder(key); err != nil || h != nil {
			return "kept (" + lockProblem(h, err) + ")"
		}
	} else {
		l, err := r.Lock(key, "sanddune gc")
		if err != nil {
			var le *LockedError
			if errors.As(err, &le) {
				return "kept (" + lockProblem(&le.Holder, nil) + ")"
			}
			return "kept (" + err.Error() + ")"
		}
		defer l.Release()
	}
	others, err := r.Git(ctx, "for-each-ref", "--format=%(refname)", "--contains", tip, "refs/heads/")
	if err != nil {
		return "kept (" + err.Error() + ")"
	}
	contained := false
	for _, ref := range strings.Fields(others) {
		if ref != "refs/heads/"+name {
			contained = true
		}
	}
	if !contained {
		return "kept (holds commits no other branch has: merge it with `git merge " + name + "` or delete it)"
	}
	if dryRun {
		return "would delete"
	}
	if _, err := r.adminGit(ctx, "update-ref", "-d", "refs/heads/"+name, tip); err != nil {
		return "kept (" + err.Error() + ")"
	}
	return "deleted"
}

func lockProblem(h *LockInfo, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("in use by %s", h.holder())
}
