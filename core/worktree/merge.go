package worktree

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// MergeLockWait bounds how long Merge waits for another run holding the
// target branch (e.g. a parallel run merging into it).
var MergeLockWait = 2 * time.Minute

// MergeResult is a successful merge-to-head.
type MergeResult struct {
	Target string
	// Commits are the agent's commits (Base..temp branch), oldest first.
	Commits []Commit
	// Head is the target branch's new tip ("" when there was nothing to merge).
	Head string
	// MergeCommit is set when the target had moved and a merge commit was
	// made; otherwise the target was fast-forwarded.
	MergeCommit string
}

// MergeError is a merge-to-head that changed nothing in the host: the temp
// branch is kept, and Error explains how to finish by hand.
type MergeError struct {
	Branch  string // the kept temp branch
	Target  string
	Commits []Commit
	// Reason is a short cause: "conflicts", "local changes would be
	// overwritten", ...; Files the paths involved, when known.
	Reason string
	Files  []string
	// Command is the exact shell command that finishes the merge by hand
	// (after committing or stashing the listed local changes, when that
	// is the reason).
	Command string
	Err     error

	commitFirst bool
}

func (e *MergeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "merging %s into %s failed: %s", e.Branch, e.Target, e.Reason)
	if len(e.Files) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(e.Files, ", "))
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	fmt.Fprintf(&b, "\nnothing was changed in the host repo; the branch %s is kept with %d commit(s):", e.Branch, len(e.Commits))
	for _, c := range e.Commits {
		fmt.Fprintf(&b, "\n  %s", c)
	}
	if e.commitFirst {
		b.WriteString("\nto finish by hand, commit or stash those local changes, then run:")
	} else {
		b.WriteString("\nto finish by hand, run:")
	}
	fmt.Fprintf(&b, "\n  %s", e.Command)
	return b.String()
}

func (e *MergeError) Unwrap() error { return e.Err }

// Merge merges the temp branch into the target branch (merge-to-head only)
// without ever leaving the host repo mid-merge; see the package doc. A
// failure after the agent made commits is a *MergeError.
func (w *Workspace) Merge(ctx context.Context) (*MergeResult, error) {
	if w.Plan.Type != StrategyMergeToHead || !w.Temp {
		return nil, fmt.Errorf("merge: run %s does not use merge-to-head", w.RunName)
	}
	// The tip first, then the commits up to it: what is listed is what
	// is merged, whatever is committed meanwhile.
	tip, err := w.Tip(ctx)
	if err != nil {
		return nil, err
	}
	commits, err := w.Repo.Commits(ctx, w.Base, tip)
	if err != nil {
		return nil, err
	}
	res := &MergeResult{Target: w.TargetBranch, Commits: commits}
	if len(commits) == 0 {
		return res, nil // Close deletes the branch if it still has none
	}
	fail := func(reason string, files []string, wt string, err error) (*MergeResult, error) {
		me := &MergeError{Branch: w.Branch, Target: w.TargetBranch, Commits: commits, Reason: reason,
			Files: files, Command: w.finishCommand(wt), Err: err, commitFirst: errors.Is(err, errLocalChanges)}
		if errors.Is(err, errRefused) {
			me.Err = nil // the reason says it all
		}
		return nil, me
	}
	l, err := w.Repo.lockWait(ctx, "branch "+w.TargetBranch, w.RunName, MergeLockWait)
	if err != nil {
		return fail("the target branch is busy", nil, "", err)
	}
	defer l.Release()
	for try := 0; ; try++ {
		head, mergeCommit, wt, reason, files, err := w.mergeOnce(ctx, tip, commits)
		if err == nil {
			res.Head, res.MergeCommit = head, mergeCommit
			return res, nil
		}
		if !errors.Is(err, errMoved) || try >= 3 {
			return fail(reason, files, wt, err)
		}
	}
}

// errRefused marks a merge refused for a reason already in MergeError.Reason.
var errRefused = errors.New("refused")

// errLocalChanges marks a merge refused because of local changes where it
// writes.
var errLocalChanges = fmt.Errorf("%w: local changes", errRefused)

// errMoved says the target branch moved while merging; the merge is retried.
var errMoved = errors.New("the target branch moved during the merge")

// mergeOnce merges tip, whose commits since Base are commits.
func (w *Workspace) mergeOnce(ctx context.Context, tip string, commits []Commit) (head, mergeCommit, wt, reason string, files []string, err error) {
	r, target := w.Repo, w.TargetBranch
	targetRef := "refs/heads/" + target
	// Where the target is checked out, and its tip there.
	wts, err := r.worktrees(ctx)
	if err != nil {
		return "", "", "", "listing worktrees failed", nil, err
	}
	var old string
	if e := findBranch(wts, target); e != nil {
		wt, old = e.Path, e.Head
	}
	if old == "" {
		if old, err = r.Tip(ctx, target); err != nil {
			return "", "", wt, "the target branch cannot be read", nil, err
		}
	}
	head = tip
	ff, err := r.IsAncestor(ctx, old, tip, commits)
	if err != nil {
		return "", "", wt, "merge-base failed", nil, err
	}
	if !ff {
		out, err := r.Git(ctx, "merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", old, tip)
		if err != nil {
			if exitCode(err) == 1 {
				return "", "", wt, "conflicts", conflictFiles(out), errRefused
			}
			return "", "", wt, "git merge-tree failed", nil, err
		}
		tree, _, _ := strings.Cut(out, "\x00")
		msg := fmt.Sprintf("Merge branch '%s' into %s", w.Branch, target)
		head, err = r.Git(ctx, "commit-tree", tree, "-p", old, "-p", tip, "-m", msg)
		if err != nil {
			return "", "", wt, "creating the merge commit failed", nil, err
		}
		mergeCommit = head
	}
	action := "GIT_REFLOG_ACTION=sanddune: merge " + w.Branch
	if wt == "" {
		_, err := gitCmd{dir: r.Root, env: []string{action}}.run(ctx, "update-ref", targetRef, head, old)
		if err != nil {
			if cur, rerr := r.Tip(ctx, target); rerr == nil && cur != old {
				return "", "", wt, "the target branch moved", nil, errMoved
			}
			return "", "", wt, "updating the target branch failed", nil, err
		}
		w.merged = tip
		return head, mergeCommit, "", "", nil, nil
	}
	// The target is checked out in wt: it moves by a fast-forward, which
	// git refuses, changing nothing, when its HEAD is no longer old or
	// local changes are where the merge writes (then said which).
	// maintenance.auto=false: no `git maintenance run --auto` after the
	// merge, repacking the user's repository while the run waits.
	_, err = (gitCmd{dir: wt, env: []string{action}}).run(ctx, "-c", "maintenance.auto=false", "merge", "--ff-only", "--quiet", "--no-stat", head)
	if err == nil {
		w.merged = tip
		return head, mergeCommit, wt, "", nil, nil
	}
	if cur, rerr := Git(ctx, wt, "rev-parse", "HEAD"); rerr == nil && cur != old {
		return "", "", wt, "the target branch moved", nil, errMoved
	}
	if overlap := w.overlap(ctx, wt, old, head); len(overlap) > 0 {
		return "", "", wt, "local changes in " + wt + " would be overwritten", overlap, errLocalChanges
	}
	return "", "", wt, "the fast-forward of " + wt + " was refused", nil, err
}

// overlap lists the local changes in wt where a merge from old to head
// writes (none when git cannot tell).
func (w *Workspace) overlap(ctx context.Context, wt, old, head string) []string {
	changed, err := Git(ctx, w.Repo.Root, "diff", "--no-renames", "--name-only", "-z", old, head)
	if err != nil {
		return nil
	}
	dirty, err := dirtyPaths(ctx, wt)
	if err != nil {
		return nil
	}
	return intersect(strings.Split(changed, "\x00"), dirty)
}

// IsAncestor reports whether commit a is an ancestor of commit b (or b
// itself). commits are some base..b, as Commits lists them: when a is a
// parent of one of them, git is not asked.
func (r *Repo) IsAncestor(ctx context.Context, a, b string, commits []Commit) (bool, error) {
	for _, c := range commits {
		if slices.Contains(strings.Fields(c.parents), a) {
			return true, nil
		}
	}
	_, err := r.Git(ctx, "merge-base", "--is-ancestor", a, b)
	if exitCode(err) == 1 {
		return false, nil
	}
	return err == nil, err
}

// finishCommand is the shell command that completes the merge by hand.
func (w *Workspace) finishCommand(wt string) string {
	merge := fmt.Sprintf("git merge %s && git branch -D %s", w.Branch, w.Branch)
	if wt == "" {
		return fmt.Sprintf("cd %s && git switch %s && %s", shellQuote(w.Repo.Root), w.TargetBranch, merge)
	}
	return fmt.Sprintf("cd %s && %s", shellQuote(wt), merge)
}

// conflictFiles parses `git merge-tree --write-tree -z --name-only` output
// after a conflict: the tree, then conflicted paths, then an empty field.
func conflictFiles(out string) []string {
	fs := strings.Split(out, "\x00")
	var files []string
	for _, f := range fs[1:] {
		if f == "" {
			break
		}
		files = append(files, f)
	}
	return files
}

func intersect(a, b []string) []string {
	in := make(map[string]bool, len(b))
	for _, s := range b {
		in[s] = true
	}
	var out []string
	for _, s := range a {
		if s != "" && in[s] {
			out = append(out, s)
		}
	}
	return out
}

// shellQuote quotes s for sh when needed.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
