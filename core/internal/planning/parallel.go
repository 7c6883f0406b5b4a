package planning

import (
	"fmt"

	"github.com/missingstudio/sanddune/core/internal/execute"
	"github.com/missingstudio/sanddune/core/worktree"
)

// CheckParallel refuses to start at once two runs that would work on the
// same branch: the second would only fail on the first one's lock.
func CheckParallel(runs []*execute.Spec) Diagnostics {
	var diags Diagnostics
	seen := map[string]string{}
	for _, r := range runs {
		var key string
		switch r.Strategy.Type {
		case worktree.StrategyBranch:
			key = "branch " + r.Strategy.Branch
		case worktree.StrategyHead:
			key = "the checked-out branch (head strategy)"
		default:
			continue // merge-to-head: a temp branch of its own
		}
		if other, ok := seen[r.Repo.Root+"\x00"+key]; ok {
			diags = append(diags, Diagnostic{Severity: Error, Block: "run." + r.Name, Attribute: "branch_strategy", Summary: "Runs cannot run in parallel",
				Detail: fmt.Sprintf("runs %q and %q both work on %s, so they cannot run at the same time: run them one after the other (without --parallel) or give them different branches", other, r.Name, key)})
		}
		seen[r.Repo.Root+"\x00"+key] = r.Name
	}
	return diags
}
