package execute

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/missingstudio/sanddune/core/worktree"
	"github.com/missingstudio/sanddune/sdk"
)

// A bind-mount sandbox has the host repo's refs mounted read-write (git
// needs them to commit), so an agent can move or delete branches and tags
// that are not the run's. The ref guard notes every branch and tag before
// the sandbox starts and, at the end, warns about each one that changed,
// with the command that puts it back. It cannot tell the agent from a user
// working in the repo meanwhile, so it only warns; a branch another run
// locked meanwhile (its own, or one it merged into) is that run's doing
// and not warned about.

// snapshotRefs records the host's branches and tags (bind-mount only).
func (r *runner) snapshotRefs(ctx context.Context) {
	if r.Caps.Contract != sdk.ContractBindMount {
		return
	}
	refs, err := r.Repo.Refs(ctx)
	if err != nil {
		r.log.Debug("ref snapshot failed", "error", err)
		return
	}
	r.refsBefore, r.refsAt = refs, time.Now()
}

// checkRefs warns about branches and tags other than the run's own that
// were moved or deleted while the sandbox was up.
func (r *runner) checkRefs(ctx context.Context) {
	if r.refsBefore == nil || r.ws == nil {
		return
	}
	now, err := r.Repo.Refs(context.WithoutCancel(ctx))
	if err != nil {
		return
	}
	own := map[string]bool{}
	for _, b := range []string{r.HostBranch, r.ws.Branch, r.ws.TargetBranch} {
		own["refs/heads/"+b] = true
	}
	for name, was := range r.refsBefore {
		if own[name] || worktree.IsTempBranch(strings.TrimPrefix(name, "refs/heads/")) {
			continue
		}
		short, kind, restore := strings.TrimPrefix(name, "refs/heads/"), "branch", "git branch -f"
		if strings.HasPrefix(name, "refs/tags/") {
			short, kind, restore = strings.TrimPrefix(name, "refs/tags/"), "tag", "git tag -f"
		} else if r.Repo.HeldSince("branch "+short, r.refsAt) {
			continue // another run's
		}
		switch is, ok := now[name]; {
		case !ok:
			r.progress.Warn("%s %s was deleted while the sandbox ran (by the agent, or by someone working in the repo); it pointed at %s: `%s %s %s` restores it",
				kind, short, was, restore, short, was)
		case is != was:
			kept := ""
			if kind == "branch" {
				kept = fmt.Sprintf(" (%s stays in `git reflog %s`)", is, short)
			}
			r.progress.Warn("%s %s moved from %s to %s while the sandbox ran (by the agent, or by someone working in the repo): if it should not have, `%s %s %s` puts it back%s",
				kind, short, was, is, restore, short, was, kept)
		}
	}
}
