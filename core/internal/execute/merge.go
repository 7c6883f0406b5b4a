package execute

import (
	"context"
	"fmt"
	"strings"

	"github.com/missingstudio/sanddune/core/internal/prompt"
	"github.com/missingstudio/sanddune/core/run"
	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// OnConflict says what a merge_branches conflict does.
type OnConflict string

// The values of on_merge_conflict.
const (
	// ConflictToAgent hands the branches that did not merge to the agent
	// ({{CONFLICTS}} in its prompt).
	ConflictToAgent OnConflict = "agent"
	// ConflictStop stops the run before its agent starts, every branch
	// kept.
	ConflictStop OnConflict = "stop"
)

// ConflictError is a merge_branches conflict that stops the run before
// its agent starts: every branch is kept as it was.
type ConflictError struct {
	Into      string
	Conflicts []worktree.Conflict
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("merge_branches: %s did not merge cleanly into %s; every branch is kept as it was", conflictList(e.Conflicts, ", "), e.Into)
}

// conflictList is the conflicts as text: "b (f1, f2)" joined by sep.
func conflictList(cs []worktree.Conflict, sep string) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.Branch
		if len(c.Files) > 0 {
			parts[i] += " (" + strings.Join(c.Files, ", ") + ")"
		}
	}
	return strings.Join(parts, sep)
}

// mergeBranches merges merge_branches into the run's branch on the host,
// before the sandbox starts. A conflict stops the run (on_merge_conflict
// "stop", or an isolated sandbox, where the agent cannot reach the other
// branches) or is left to the agent: its prompt's {{CONFLICTS}}.
func (r *runner) mergeBranches(ctx context.Context) *run.Error {
	if len(r.MergeBranches) == 0 {
		return nil
	}
	r.enter(run.PhaseMerge, 0)
	ph := r.progress.Phase("Merging " + strings.Join(r.MergeBranches, ", ") + " into " + r.ws.Branch)
	var conflicts []worktree.Conflict
	err := within(ctx, "merge", r.Timeouts.Merge, func(ctx context.Context) (err error) {
		conflicts, err = r.ws.MergeBranches(ctx, r.MergeBranches)
		return err
	})
	ph.Done(err)
	if err != nil {
		return r.fail(ctx, run.PhaseMerge, "", 0, err, "the branches are kept as they were: fix the cause and run again")
	}
	r.conflicts = conflicts
	if len(conflicts) > 0 {
		if r.OnMergeConflict == ConflictStop || r.Caps.Contract == sdk.ContractIsolated {
			hint := fmt.Sprintf("merge them by hand (git merge %s), or run again with on_merge_conflict = \"agent\" in a bind-mount sandbox", conflicts[0].Branch)
			if r.Caps.Contract == sdk.ContractIsolated && r.OnMergeConflict != ConflictStop {
				hint = "an isolated sandbox gets only the run's branch, so its agent cannot merge the others: use a bind-mount sandbox (docker, podman, bubblewrap) for this run, or merge them by hand (git merge " + conflicts[0].Branch + ")"
			}
			return r.fail(ctx, run.PhaseMerge, "", 0, &ConflictError{Into: r.ws.Branch, Conflicts: conflicts}, hint)
		}
		r.progress.Warn("merge_branches: %s did not merge cleanly; the agent merges them ({{CONFLICTS}})", conflictList(conflicts, ", "))
	}
	if r.sandboxBase, err = r.ws.Tip(ctx); err != nil {
		return r.fail(ctx, run.PhaseMerge, "", 0, err, "")
	}
	return nil
}

// mergeArgs are the built-in prompt arguments of a run with
// merge_branches: BRANCHES (every branch, one "- name" line each) and
// CONFLICTS (those that did not merge, with their files; "none").
func (r *runner) mergeArgs() map[string]string {
	if len(r.MergeBranches) == 0 {
		return nil
	}
	lines := make([]string, len(r.MergeBranches))
	for i, b := range r.MergeBranches {
		lines[i] = "- " + b
	}
	conflicts := "none"
	if len(r.conflicts) > 0 {
		conflicts = "- " + conflictList(r.conflicts, "\n- ")
	}
	return map[string]string{prompt.Branches: strings.Join(lines, "\n"), prompt.Conflicts: conflicts}
}
