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
	"syscall"
)

// Holder returns who holds the lock on key, or nil when it is free.
// Unlike Lock it changes nothing (it takes a shared flock for a moment, so
// a Lock at that very moment fails as if held).
func (r *Repo) Holder(key string) (*LockInfo, error) {
	path := filepath.Join(r.LockDir(), lockFileName(key))
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	err = flockRetry(f, syscall.LOCK_SH|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		held := readHolder(path)
		return &held, nil
	}
	return nil, err
}

// SweptLock is what SweepLocks did (or would do) with one lock file.
type SweptLock struct {
	Path string
	// Info is what the lock's last holder wrote in it.
	Info LockInfo
	// Action is "removed", "would remove" or "kept (<error>)".
	Action string
}

// SweepLocks removes the lock files that no process holds: left by a run
// that died (the kernel released its flock, the file stays). With dryRun
// nothing changes.
func (r *Repo) SweepLocks(dryRun bool) ([]SweptLock, error) {
	paths, err := filepath.Glob(filepath.Join(r.LockDir(), "*.lock"))
	if err != nil {
		return nil, err
	}
	var out []SweptLock
	for _, p := range paths {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			continue // removed meanwhile
		}
		if flockRetry(f, syscall.LOCK_EX|syscall.LOCK_NB) != nil || !isFileAt(f, p) {
			f.Close()
			continue // held, or released and removed meanwhile
		}
		s := SweptLock{Path: p, Info: readHolder(p), Action: "would remove"}
		if !dryRun {
			s.Action = "removed"
			if err := os.Remove(p); err != nil {
				s.Action = "kept (" + err.Error() + ")"
			}
		}
		f.Close()
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
