package worktree

import (
	"context"
	"fmt"
	"strings"
)

// Conflict is a branch of MergeBranches that did not merge cleanly, and
// the files in conflict.
type Conflict struct {
	Branch string
	Files  []string
}

// MergeBranches merges branches, in order, into the run's branch before
// its agent starts (merge_branches), the way Merge does: the merge is
// computed with `git merge-tree`, so neither the worktree nor any branch
// is ever left mid-merge. A branch already merged is skipped, one that
// is ahead is fast-forwarded to, one that conflicts is left out and
// returned with its files; nothing of it is changed. With a worktree the
// branch moves by a fast-forward inside it, which git refuses (changing
// nothing) when local changes are in the way.
func (w *Workspace) MergeBranches(ctx context.Context, branches []string) ([]Conflict, error) {
	if w.Plan.Type != StrategyMergeToHead && w.Plan.Type != StrategyBranch {
		return nil, fmt.Errorf("merge_branches: run %s has no branch of its own (strategy %s)", w.RunName, w.Plan.Type)
	}
	r, ref := w.Repo, "refs/heads/"+w.Branch
	var conflicts []Conflict
	for _, b := range branches {
		cur, err := r.Tip(ctx, w.Branch)
		if err != nil {
			return conflicts, fmt.Errorf("reading branch %s: %w", w.Branch, err)
		}
		tip, err := r.Tip(ctx, b)
		if err != nil {
			return conflicts, fmt.Errorf("merge_branches: branch %s: %w", b, err)
		}
		if w.isAncestor(ctx, tip, cur) {
			continue // already merged
		}
		next := tip
		if !w.isAncestor(ctx, cur, tip) {
			out, err := r.Git(ctx, "merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", cur, tip)
			if err != nil {
				if exitCode(err) == 1 {
					conflicts = append(conflicts, Conflict{Branch: b, Files: conflictFiles(out)})
					continue
				}
				return conflicts, fmt.Errorf("merging %s: git merge-tree: %w", b, err)
			}
			tree, _, _ := strings.Cut(out, "\x00")
			if next, err = r.Git(ctx, "commit-tree", tree, "-p", cur, "-p", tip, "-m", fmt.Sprintf("Merge branch '%s' into %s", b, w.intoName())); err != nil {
				return conflicts, fmt.Errorf("merging %s: creating the merge commit: %w", b, err)
			}
		}
		action := "GIT_REFLOG_ACTION=sanddune: merge_branches " + b
		if w.Dir != "" {
			_, err = gitCmd{dir: w.Dir, env: []string{action}}.run(ctx, "merge", "--ff-only", "--quiet", "--no-stat", next)
		} else {
			_, err = gitCmd{dir: r.Root, env: []string{action}}.run(ctx, "update-ref", ref, next, cur)
		}
		if err != nil {
			return conflicts, fmt.Errorf("merging %s into %s: %w", b, w.Branch, err)
		}
	}
	return conflicts, nil
}

func (w *Workspace) isAncestor(ctx context.Context, a, b string) bool {
	_, err := w.Repo.Git(ctx, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// Tip is the run's branch's current commit.
func (w *Workspace) Tip(ctx context.Context) (string, error) {
	return w.Repo.Tip(ctx, w.Branch)
}

// intoName is the branch a merge commit says it merges into: where the
// commits end up (a merge-to-head run's host branch, not its temporary
// one), else the run's branch.
func (w *Workspace) intoName() string {
	if w.TargetBranch != "" {
		return w.TargetBranch
	}
	return w.Branch
}
