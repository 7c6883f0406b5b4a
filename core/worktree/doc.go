// Package worktree owns everything sanddune does with the host repository's
// git: running git, resolving a run's branch strategy, creating and removing
// worktrees, locking branches, merging a run's temporary branch back, and
// copying untracked files into a worktree.
//
// A run uses it in this order:
//
//	repo, _ := worktree.Open(ctx, dir)                  // host repo
//	branch, _ := repo.CurrentBranch(ctx)                // "" when detached
//	plan, err := worktree.Resolve(strategy, contract, branch, len(copy) > 0)
//	                                                    // pure; err is a *PlanError (config diagnostic)
//	ws, err := worktree.Prepare(ctx, repo, plan, worktree.PrepareOptions{RunName: name})
//	                                                    // locks, creates or reuses the worktree / branch
//	worktree.CopyPaths(repo.Root, ws.Dir, copy)         // bind-mount with a worktree
//	... sandbox.Create(WorktreePath: ws.Dir, GitMounts: ws.GitMounts), agent ...
//	commits, _ := ws.Commits(ctx)                       // exactly the run's commits (base..branch)
//	res, err := ws.Merge(ctx)                           // merge-to-head only; err is a *MergeError
//	closed, _ := ws.Close(ctx)                          // always: releases locks, removes or preserves
//
// Isolated sandboxes have no host worktree (ws.Dir is empty): the
// github.com/missingstudio/sanddune/core/gitsync package moves ws.Branch at
// ws.Base into the sandbox and the agent's commits back onto ws.Branch, then
// Merge and Close work as for bind-mount.
//
// # Strategies
//
//   - head (bind-mount default): no worktree; the agent works in the host
//     repo root on the checked-out branch. Rejected for isolated sandboxes and
//     with copy_to_worktree.
//   - merge-to-head (isolated default): a temporary branch
//     sanddune/<run>/<YYYYMMDD-HHMMSS>-<6 hex> starts at the host branch's tip
//     (bind-mount: checked out in .sanddune/worktrees/<run>-<ts>-<hex>) and is
//     merged into the host branch by Merge, then deleted by Close.
//   - branch: the named branch, created from BaseBranch (default HEAD) when
//     missing, checked out in .sanddune/worktrees/<branch with / as ->. A
//     clean existing worktree of the branch under .sanddune/worktrees is
//     reused (and fast-forwarded from origin when strictly behind, best
//     effort, ADR 0003); a dirty one, or the branch checked out anywhere
//     else, is an error.
//
// # Layout and ignore files
//
// Worktrees live in <root>/.sanddune/worktrees, patches in
// <root>/.sanddune/patches. Each directory sanddune creates there holds a
// .gitignore containing "*" (EnsureIgnoredDir), so they never make the host
// repo dirty and no tracked file or git config is written. Locks live in
// <git-common-dir>/sanddune/locks: shared by all worktrees of the repo,
// never untracked files, and outside every directory mounted into a sandbox.
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
// strategy in a normal repo: <root>/.git) are omitted.
//
// # Locks
//
// Prepare takes a lock on the branch the run writes to and on its worktree
// path, failing fast with a *LockedError naming the holder (run, pid, host,
// start time). Merge waits briefly for the target branch's lock. Lock files
// are created with O_EXCL and hold JSON LockInfo; a lock whose process is
// gone (same host: pid dead, pid reused, or machine rebooted) is broken
// under a flock'd guard so that racing runs cannot both take it.
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
// Git runs argv-only with LC_ALL=C, GIT_TERMINAL_PROMPT=0 and
// GIT_OPTIONAL_LOCKS=0, without inherited GIT_DIR-style variables, and with
// -c branch.autoSetupMerge=false wherever git could write config. Errors are
// *GitError values carrying git's stderr.
package worktree
