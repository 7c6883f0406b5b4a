// Package worktree owns everything sanddune does with the host repository's
// git: running git, resolving a run's branch strategy, creating and removing
// worktrees, locking branches, merging a run's temporary branch back, and
// copying untracked files into a worktree.
//
// A run uses it in this order:
//
//	repo, _ := worktree.Open(ctx, dir)                  // host repo
//	branch, _ := repo.CurrentBranch(ctx)                // "" when detached
//	s := worktree.Strategy{Type: worktree.StrategyType(bs.Type), Branch: bs.Branch, BaseBranch: bs.BaseBranch}
//	plan, err := worktree.Resolve(s, contract, branch, len(copy) > 0)
//	                                                    // pure; err is a *PlanError (config diagnostic)
//	ws, err := worktree.Prepare(ctx, repo, plan, worktree.PrepareOptions{RunName: name, Logger: log})
//	                                                    // locks, creates or reuses the worktree / branch
//	skipped, err := worktree.CopyPaths(ctx, repo.Root, ws.Dir, copy) // bind-mount with a worktree
//	... sandbox.Create(WorktreePath: ws.Dir, GitMounts: ws.GitMounts), agent ...
//	commits, _ := ws.Commits(ctx)                       // exactly the run's commits (Base..Branch)
//	res, err := ws.Merge(ctx)                           // merge-to-head only; err is a *MergeError
//	closed, err := ws.Close(ctx)                        // always: releases locks, removes or preserves
//	                                                    // closed.PreservedPath, closed.KeptBranch
//
// Isolated sandboxes have no host worktree (ws.Dir is empty and GitMounts
// nil): the github.com/missingstudio/sanddune/core/internal/gitsync package moves
// ws.Branch at ws.Base into the sandbox and the agent's commits back onto
// ws.Branch, then Merge and Close work as for bind-mount. Their
// copy_to_worktree paths come from CopySources (validated host paths, ignored
// files included) and go in with Sandbox.CopyIn after the sync-in.
//
// Strategy is core.BranchStrategy (an alias): core owns no copy of it.
// Nothing is left half-done: a failed Prepare removes what it created and
// releases its locks, a failed Merge changes nothing in the host, and Close
// runs even on a cancelled context.
//
// # Strategies
//
//   - head (bind-mount default): no worktree; the agent works in the host
//     repo root on the checked-out branch. Rejected for isolated sandboxes and
//     with copy_to_worktree.
//   - merge-to-head (isolated default): a temporary branch
//     sanddune/<run>/<YYYYMMDD-HHMMSS>-<6 hex> (SanitizeName, Stamp) starts at
//     the host branch's tip (bind-mount: checked out in
//     .sanddune/worktrees/<run>-<ts>-<hex>) and is merged into the host
//     branch by Merge. Close deletes it once merged (if still at the tip
//     merged) or when it has no commits, and keeps it
//     (CloseResult.KeptBranch) when it holds unmerged commits or its
//     worktree is preserved.
//   - branch: the named branch, created from BaseBranch (default HEAD) when
//     missing, checked out in .sanddune/worktrees/<branch with / as ->. An
//     existing worktree of the branch under .sanddune/worktrees is reused:
//     a clean one is fast-forwarded from origin when strictly behind (best
//     effort), a dirty one (preserved by an interrupted or failed run) is
//     continued from as it is (ADR 0003). The branch checked out anywhere
//     else is an error.
//
// # Layout and ignore files
//
// Worktrees live in <root>/.sanddune/worktrees, patches in
// <root>/.sanddune/patches. Each directory sanddune creates there holds a
// .gitignore containing "*" (EnsureIgnoredDir), so they never
// make the host repo dirty and no tracked file or git config is written.
// Locks live in <git-common-dir>/sanddune/locks: shared by all worktrees
// of the repo, never untracked files, and not among a worktree sandbox's
// mounts.
//
// # Git metadata mounts (bind-mount)
//
// A linked worktree's .git file points at <common>/worktrees/<id>; git inside
// the sandbox needs that path and parts of the common dir at the same
// absolute paths. Workspace.GitMounts lists exactly:
//
//	<common>/worktrees/<id>   rw  HEAD, index, reflog of the worktree
//	<common>/objects          rw  new commits
//	<common>/refs             rw  branch updates
//	<common>/logs             rw  branch reflogs
//	<common>/HEAD             ro
//	<common>/config           ro  the agent cannot set hooks, fsmonitor, ...
//	<common>/packed-refs      ro  (when present)
//	<common>/shallow          ro  (when present)
//	<common>/info             ro  (when present: exclude, attributes)
//
// The host's hooks directory is not mounted. Because the common dir itself
// is not writable in the sandbox, operations that rewrite packed-refs
// (deleting a packed branch, git pack-refs) or run gc fail there; commits,
// branches, merges, rebases and tags work. Objects reached through
// objects/info/alternates outside the common dir and submodules are not
// mounted. Mounts already inside the sandbox's worktree mount (head
// strategy in a normal repo: <root>/.git) are omitted. The worktree's own
// gitdir is writable by the agent: in a repo with
// extensions.worktreeConfig the agent could write its config.worktree,
// which host git reads in that worktree (sanddune's own status calls there
// disable fsmonitor).
//
// # Locks
//
// Prepare takes a lock on the branch the run writes to ("branch <name>")
// and on its worktree path ("worktree <path>"; head locks the repo root),
// failing fast with a *LockedError naming the holder (run, pid, host, start
// time). Merge takes the target branch's lock, waiting up to MergeLockWait
// for a parallel run's merge to finish. A lock is a flock(2) on a file in
// LockDir, so the kernel releases it when its holder dies; the holder
// writes its LockInfo into the file for the error message. Release unlinks
// the file while holding it, and Lock checks after locking that the file
// is still the one at the path, so a waiter never holds an unlinked file.
// Worktree and branch administration (worktree admin dirs, `git worktree
// prune`, branch deletion, an isolated run's branch creation) runs one at
// a time per repo under a flock (git reads half-written worktree metadata
// otherwise). sanddune makes,
// lists and removes a linked worktree's admin files itself, in the order
// git writes them (ADR 0029), so no git process runs under the flock for
// that: a new worktree's files are checked out after the flock is
// released (`git checkout --force` from a detached HEAD, with -b for a
// new branch, so git refuses a branch checked out elsewhere), and a
// clean one (`git status`, outside the flock) has its files removed
// before its admin dir is, under the flock. A worktree git would refuse
// to remove without --force (locked, or holding a submodule or another
// repository) is left to `git worktree remove`.
//
// # Cleanup after dead runs
//
// For `sanddune gc` (package core/gc): Sweep removes clean worktrees under
// .sanddune/worktrees that no live run holds; SweepLocks removes the lock
// files no process holds; SweepBranches deletes temporary branches
// (IsTempBranch) that no live run locks, no worktree has checked out and
// whose tip is in another local branch, so nothing is lost. Holder looks
// at a lock without taking it (dry runs).
//
// # merge-to-head without a mid-merge host
//
// Merge computes the merge with `git merge-tree --write-tree` (objects only)
// and `git commit-tree`, or takes the temp branch's tip when the target has
// not moved. The target branch then fast-forwards to that commit: with a
// compare-and-swap `git update-ref` when it is not checked out, or with
// `git merge --ff-only` in the worktree that has it checked out. Local
// changes there are allowed only where the merge does not touch them;
// git's two-way checkout refuses otherwise and changes nothing. So on a
// conflict or an overlap nothing in the host changes, the temp branch is
// kept, and the *MergeError names the branch, its commits and the commands
// to finish by hand. No MERGE_HEAD is ever written.
//
// # Git invocation
//
// Branch tips, HEADs and the ref guard's branches and tags are read from
// git's ref files (loose, else packed-refs; never blocking on a file a
// sandbox replaced); a reftable repository is asked with git.
//
// Git runs argv-only with LC_ALL=C, GIT_TERMINAL_PROMPT=0 and
// GIT_OPTIONAL_LOCKS=0, without inherited GIT_DIR-style variables, and with
// -c branch.autoSetupMerge=false wherever git could write config. Errors are
// *GitError values carrying git's stderr. Cancelling the context sends git
// SIGTERM (so it removes its lock files), then SIGKILL after 5 s.
package worktree
