package planning

import (
	"fmt"

	"github.com/missingstudio/sanddune/core/internal/execute"
	"github.com/missingstudio/sanddune/core/worktree"
)

// CheckParallel refuses runs that may run at the same time (overlap(i,
// j)) on the same branch: the second would only fail on the first one's
// lock. block(i) is run i's block address, for the diagnostic.
func CheckParallel(runs []*execute.Spec, overlap func(i, j int) bool, block func(i int) string) Diagnostics {
	var diags Diagnostics
	seen := map[string][]int{}
	for i, r := range runs {
		key := BranchKey(r)
		if key == "" {
			continue
		}
		for _, j := range seen[key] {
			if !overlap(j, i) {
				continue
			}
			other := runs[j]
			diags = append(diags, Diagnostic{Severity: Error, Block: block(i), Attribute: "branch_strategy", Summary: "Runs cannot run in parallel",
				Detail: fmt.Sprintf("runs %q and %q both work on %s and nothing orders them, so they would run at the same time: give them different branches, or order them (depends_on, or run them without --parallel)", other.Name, r.Name, branchOf(r))})
			break
		}
		seen[key] = append(seen[key], i)
	}
	return diags
}

// BranchKey is what two runs at once must not share: their repo and
// branch; "" for merge-to-head, whose temp branch is its own.
func BranchKey(r *execute.Spec) string {
	switch r.Strategy.Type {
	case worktree.StrategyBranch:
		return r.Repo.Root + ": branch " + r.Strategy.Branch
	case worktree.StrategyHead:
		return r.Repo.Root + ": the checked-out branch (head strategy)"
	}
	return ""
}

func branchOf(r *execute.Spec) string {
	if r.Strategy.Type == worktree.StrategyBranch {
		return "branch " + r.Strategy.Branch
	}
	return "the checked-out branch (head strategy)"
}
