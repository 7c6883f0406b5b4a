package config

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/missingstudio/sanddune/core"
	"github.com/missingstudio/sanddune/sdk"
)

// ResolveBranchStrategy checks the run's branch strategy against the
// contract of its sandbox and fills the default type: head for bind-mount
// sandboxes, merge-to-head for isolated ones. head is rejected for isolated
// sandboxes and together with copy_to_worktree (there is no worktree to copy
// into). Load calls it when the SchemaSource reports sandbox capabilities.
func (r *RunBlock) ResolveBranchStrategy(contract sdk.Contract) hcl.Diagnostics {
	bs := &r.Options.BranchStrategy
	sandbox := r.Options.Sandbox.Address
	rng := r.AttrRange("branch_strategy")
	switch contract {
	case sdk.ContractIsolated:
		switch bs.Type {
		case "":
			bs.Type = core.StrategyMergeToHead
		case core.StrategyHead:
			return hcl.Diagnostics{errorDiag(rng, "head strategy needs a bind-mount sandbox",
				"%s is an isolated sandbox with its own copy of the repository, so the agent cannot commit to the host's checked-out branch. "+
					`Use type = "merge-to-head" (the default for isolated sandboxes) or "branch".`, sandbox)}
		}
	case sdk.ContractBindMount:
		headByDefault := bs.Type == ""
		if !headByDefault && bs.Type != core.StrategyHead {
			return nil
		}
		if len(r.Options.CopyToWorktree) > 0 {
			if headByDefault {
				rng = r.AttrRange("copy_to_worktree")
			}
			return hcl.Diagnostics{errorDiag(rng, "copy_to_worktree is not supported with the head strategy",
				"With head (the default for bind-mount sandbox %s) the host working directory is mounted directly and there is no worktree to copy into. "+
					`Set branch_strategy = { type = "merge-to-head" } or { type = "branch", branch = "..." }, or remove copy_to_worktree.`, sandbox)}
		}
		bs.Type = core.StrategyHead
	default:
		return hcl.Diagnostics{errorDiag(r.AttrRange("sandbox"), "Unknown sandbox contract",
			"%s declares the contract %q; sanddune knows %q and %q.", sandbox, contract, sdk.ContractBindMount, sdk.ContractIsolated)}
	}
	return nil
}
