// Package gitsync moves code between the host repository and an isolated
// sandbox (sdk.ContractIsolated) with git bundles, so the sandbox holds a
// real clone with the host's SHAs and the agent's commits come back
// unchanged: SHAs, authors, dates and merges survive, unlike patch replay.
//
//	spec := gitsync.Spec{HostRepo: repo.Root, Branch: ws.Branch, Base: ws.Base, RunName: name}
//	err := gitsync.SyncIn(ctx, sb, spec)       // after Create, before hooks
//	...agent...
//	out, err := gitsync.SyncOut(ctx, sb, spec) // before ws.Merge / ws.Close
//	// out.Commits (Base..sandbox HEAD), out.PatchPath (uncommitted work, or "")
//
// SyncIn bundles refs/heads/<Branch> (which must be at Base) on the host,
// copies the bundle into the sandbox's git dir, and there runs git init,
// fetch, reset --hard, so Info().RepoPath is a clone checked out on Branch
// at Base. A local user.name/user.email is set in the sandbox repo only
// when the sandbox's git has none, from the host's author identity.
// RepoPath must exist (providers create it); files already in it stay
// unless tracked files overwrite them.
//
// SyncOut first saves uncommitted work (staged, unstaged and untracked
// files, ignored ones excluded; built in a temporary index, so the
// sandbox's own index is untouched) as a binary `git diff` against the
// sandbox HEAD, copied to <HostRepo>/.sanddune/patches/<run>-<ts>.patch:
// `git apply` accepts it on a checkout of the synced HEAD. Then, when
// Base..HEAD has commits, it bundles them, fetches the bundle into the host
// object store and fast-forwards refs/heads/<Branch> to the sandbox HEAD
// (compare-and-swap). When Branch moved on the host meanwhile and cannot be
// fast-forwarded, the commits go to a new branch
// sanddune/rescue/<run>/<ts> named in the *RescueError. SyncOut is
// idempotent: calling it again syncs Base..HEAD again.
//
// Inspect reports what SyncOut would bring back (commits Base..HEAD,
// uncommitted work) without changing anything, and whether the sandbox
// holds a synced clone at all; `sanddune gc` uses it before salvaging the
// sandbox of a run that died (package core/gc).
//
// Every sandbox command is argv (git, plus cp and rm for temporary files in
// the sandbox's git dir) with LC_ALL=C and GIT_TERMINAL_PROMPT=0.
package gitsync
