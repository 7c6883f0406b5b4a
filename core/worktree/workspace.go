package worktree

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/missingstudio/sanddune/sdk"
)

// PrepareOptions configures Prepare.
type PrepareOptions struct {
	// RunName names the run: lock holder, temp branch and worktree name.
	RunName string
	// Logger receives reuse and refresh notes; nil discards them.
	Logger hclog.Logger
}

// Workspace is where one run's agent works and where its commits go.
type Workspace struct {
	Repo    *Repo
	Plan    Plan
	RunName string
	// Dir is the host directory the agent works in: the worktree, or the
	// repo root for head. Empty for isolated sandboxes (no host worktree).
	Dir string
	// Branch receives the agent's commits: the temp branch (merge-to-head),
	// the named branch (branch) or the host branch (head; "" if detached).
	Branch string
	// TargetBranch is where the commits end up once the run is done (after
	// Merge for merge-to-head).
	TargetBranch string
	// Base is the commit the run started from: the run's commits are
	// Base..Branch.
	Base string
	// Temp says Branch is a temporary branch Close deletes once merged.
	Temp bool
	// Reused says an existing worktree of the branch was reused.
	Reused bool
	// ReusedDirty says the reused worktree holds uncommitted changes (left
	// by an earlier run that was interrupted or failed): the run continues
	// from them.
	ReusedDirty bool
	// ExistingBranch says the named branch (branch strategy) existed
	// before the run: the run continues from its tip.
	ExistingBranch bool
	// DirtyHead says the head strategy's working tree (the host's own)
	// has uncommitted changes to tracked files when the run starts: the
	// agent works among them and may commit them.
	DirtyHead bool
	// GitMounts is the git metadata a bind-mount sandbox must mount at the
	// same path for git to work in Dir (see the package doc). Nil for
	// isolated sandboxes.
	GitMounts []sdk.Mount

	log    hclog.Logger
	locks  []*Lock
	merged string // the temp branch's tip Merge merged, "" until then
	closed *CloseResult
	// What Prepare created, undone when Prepare fails.
	createdDir    string
	createdBranch string // created at createdAt
	createdAt     string
}

// Prepare locks the run's branch and worktree and creates (or reuses) them
// as plan says. On error nothing stays locked.
func Prepare(ctx context.Context, repo *Repo, plan Plan, opts PrepareOptions) (*Workspace, error) {
	if opts.RunName == "" {
		return nil, errors.New("worktree: run name is required")
	}
	w := &Workspace{Repo: repo, Plan: plan, RunName: opts.RunName, TargetBranch: plan.TargetBranch, log: opts.Logger}
	if w.log == nil {
		w.log = hclog.NewNullLogger()
	}
	var err error
	switch plan.Type {
	case StrategyHead:
		err = w.prepareHead(ctx)
	case StrategyMergeToHead:
		err = w.prepareTemp(ctx, time.Now())
	case StrategyBranch:
		err = w.prepareBranch(ctx)
	default:
		err = fmt.Errorf("worktree: unknown strategy %q", plan.Type)
	}
	if err == nil && plan.Contract == sdk.ContractBindMount {
		w.GitMounts, err = gitMounts(w.Dir)
	}
	if err != nil {
		w.undo()
		w.releaseLocks()
		return nil, err
	}
	return w, nil
}

// undo removes the worktree and branch a failed Prepare created (also when
// git was interrupted while creating them), best effort.
func (w *Workspace) undo() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if d := w.createdDir; d != "" { // the path did not exist before Prepare
		if admin, err := w.Repo.adminOf(d); err == nil {
			_ = w.Repo.dropWorktree(ctx, d, admin)
		} else {
			os.RemoveAll(d)
			_, _ = w.Repo.adminGit(ctx, "worktree", "prune")
		}
	}
	if b := w.createdBranch; b != "" { // only if still where we made it
		_, _ = w.Repo.adminGit(ctx, "update-ref", "-d", "refs/heads/"+b, w.createdAt)
	}
}

func (w *Workspace) lock(key string) error {
	l, err := w.Repo.Lock(key, w.RunName)
	if err != nil {
		return err
	}
	w.locks = append(w.locks, l)
	return nil
}

func (w *Workspace) releaseLocks() {
	for _, l := range w.locks {
		if err := l.Release(); err != nil {
			w.log.Warn("releasing lock failed", "error", err)
		}
	}
	w.locks = nil
}

func (w *Workspace) prepareHead(ctx context.Context) error {
	r := w.Repo
	if err := w.lock("worktree " + r.Root); err != nil {
		return err
	}
	if w.Plan.Branch != "" {
		if err := w.lock("branch " + w.Plan.Branch); err != nil {
			return err
		}
	}
	head, cur, dirty, err := r.Checkout(ctx)
	if err != nil {
		return err
	}
	if cur != w.Plan.Branch {
		return fmt.Errorf("the host repo is on %s, not %s as when the run was planned", orDetached(cur), orDetached(w.Plan.Branch))
	}
	w.Dir, w.Branch, w.Base, w.DirtyHead = r.Root, cur, head, dirty
	return nil
}

func (w *Workspace) prepareTemp(ctx context.Context, now time.Time) error {
	r := w.Repo
	target := w.Plan.TargetBranch
	base, err := r.Tip(ctx, target)
	if err != nil {
		return fmt.Errorf("target branch %s: %w", target, err)
	}
	name := SanitizeName(w.RunName)
	stamp := Stamp(now)
	w.Branch, w.Base, w.Temp = "sanddune/"+name+"/"+stamp, base, true
	if err := w.lock("branch " + w.Branch); err != nil {
		return err
	}
	w.createdBranch, w.createdAt = w.Branch, base
	if !w.Plan.Worktree {
		_, err := r.adminGit(ctx, append(noConfigWrites, "branch", "--no-track", w.Branch, base)...)
		return err
	}
	dir := filepath.Join(r.StateDir("worktrees"), name+"-"+stamp)
	if err := w.lock("worktree " + dir); err != nil {
		return err
	}
	if err := EnsureIgnoredDir(r.StateDir("worktrees")); err != nil {
		return err
	}
	w.createdDir = dir
	if err := r.addWorktree(ctx, dir, base, "-b", w.Branch); err != nil {
		return err
	}
	w.Dir = dir
	return nil
}

func (w *Workspace) prepareBranch(ctx context.Context) error {
	r := w.Repo
	b := w.Plan.Branch
	w.Branch = b
	if err := w.lock("branch " + b); err != nil {
		return err
	}
	wts, err := r.worktrees(ctx)
	if err != nil {
		return err
	}
	managed := r.StateDir("worktrees")
	dir := filepath.Join(managed, strings.ReplaceAll(b, "/", "-"))
	if slices.ContainsFunc(wts, func(e worktreeEntry) bool {
		return e.Prunable && (e.Branch == "refs/heads/"+b || samePath(e.Path, dir))
	}) {
		// A worktree whose directory is gone still holds its branch and
		// path. (Another run's, whose files are being removed, is none of
		// this run's business.)
		if _, err := r.adminGit(ctx, "worktree", "prune"); err != nil && ctx.Err() == nil {
			w.log.Warn("git worktree prune failed", "error", err)
		}
		if wts, err = r.worktrees(ctx); err != nil {
			return err
		}
	}
	if !w.Plan.Worktree { // isolated: the branch only
		if wt := findBranch(wts, b); wt != nil {
			return fmt.Errorf("branch %s is checked out in the worktree at %s; sanddune cannot update a checked-out "+
				"branch from an isolated sandbox. Remove that worktree (git worktree remove %s) or pick another branch",
				b, wt.Path, wt.Path)
		}
		return w.ensureBranch(ctx)
	}
	if err := w.lock("worktree " + dir); err != nil {
		return err
	}
	if wt := findBranch(wts, b); wt != nil {
		if !samePath(wt.Path, dir) && !within(realPath(managed), realPath(wt.Path)) {
			return fmt.Errorf("branch %s is already checked out in the worktree at %s; git cannot check out a branch "+
				"twice. Switch that worktree to another branch or pick another branch", b, wt.Path)
		}
		if !samePath(wt.Path, dir) {
			if err := w.lock("worktree " + wt.Path); err != nil {
				return err
			}
		}
		return w.reuse(ctx, wt.Path)
	}
	for _, wt := range wts {
		if samePath(wt.Path, dir) {
			return fmt.Errorf("the worktree at %s is on %s, not branch %s; finish or remove it "+
				"(git worktree remove %s)", dir, orDetached(strings.TrimPrefix(wt.Branch, "refs/heads/")), b, dir)
		}
	}
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("%s exists but is not a git worktree; move it away or delete it", dir)
	}
	if err := EnsureIgnoredDir(managed); err != nil {
		return err
	}
	exists, err := r.branchExists(ctx, b)
	if err != nil {
		return err
	}
	w.createdDir = dir
	w.ExistingBranch = exists
	if exists {
		if w.Base, err = r.Tip(ctx, b); err != nil {
			return err
		}
		// Checked out by git from a detached HEAD at its tip: git refuses
		// a branch another worktree has, also while it is rebased or
		// bisected there (no longer on the branch).
		err = r.addWorktree(ctx, dir, w.Base, b, "--")
	} else {
		if w.Base, err = r.base(ctx, w.Plan.BaseBranch); err != nil {
			return fmt.Errorf("base branch %s: %w", orHEAD(w.Plan.BaseBranch), err)
		}
		w.createdBranch, w.createdAt = b, w.Base
		err = r.addWorktree(ctx, dir, w.Base, "-b", b)
	}
	if err == nil && exists {
		// The base is the branch's tip once checked out: it may have moved
		// since it was read (as rev-parse HEAD there told before).
		w.Base, err = r.Tip(ctx, b)
	}
	if err != nil {
		return err
	}
	w.Dir = dir
	return nil
}

// ensureBranch creates Plan.Branch from BaseBranch when missing and sets
// Base to its tip.
func (w *Workspace) ensureBranch(ctx context.Context) error {
	r, b := w.Repo, w.Plan.Branch
	exists, err := r.branchExists(ctx, b)
	if err != nil {
		return err
	}
	w.ExistingBranch = exists
	if !exists {
		base, err := r.base(ctx, w.Plan.BaseBranch)
		if err != nil {
			return fmt.Errorf("base branch %s: %w", orHEAD(w.Plan.BaseBranch), err)
		}
		w.createdBranch, w.createdAt = b, base
		if _, err := r.adminGit(ctx, append(noConfigWrites, "branch", "--no-track", b, base)...); err != nil {
			return err
		}
	}
	w.Base, err = r.Tip(ctx, b)
	return err
}

// reuse takes over the existing worktree of the branch (ADR 0003). One
// with uncommitted changes is what an interrupted or failed run preserved:
// the run continues from them, as the user who reruns it expects.
func (w *Workspace) reuse(ctx context.Context, dir string) error {
	dirty, err := Dirty(ctx, dir)
	if err != nil {
		return err
	}
	w.Dir, w.Reused, w.ReusedDirty, w.ExistingBranch = dir, true, dirty, true
	if !dirty {
		w.refreshFromOrigin(ctx)
	}
	w.Base, err = Git(ctx, dir, "rev-parse", "HEAD")
	w.log.Info("reusing existing worktree", "path", dir, "branch", w.Branch, "uncommitted_changes", dirty)
	return err
}

// refreshFromOrigin fast-forwards a reused clean worktree to origin/<branch>
// when it is strictly behind. Every failure is logged and ignored.
func (w *Workspace) refreshFromOrigin(ctx context.Context) {
	b, dir := w.Branch, w.Dir
	if cur, err := currentBranch(ctx, dir); err != nil || cur != b {
		w.log.Info("worktree HEAD is not on the branch, skipping origin refresh", "path", dir, "branch", b)
		return
	}
	if _, err := Git(ctx, dir, "remote", "get-url", "origin"); err != nil {
		return
	}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	remote := "refs/remotes/origin/" + b
	if _, err := Git(fctx, dir, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "origin",
		"+refs/heads/"+b+":"+remote); err != nil {
		w.log.Warn("could not fetch from origin; reusing worktree as-is", "branch", b, "error", err)
		return
	}
	head, err1 := Git(ctx, dir, "rev-parse", "HEAD")
	up, err2 := Git(ctx, dir, "rev-parse", remote)
	if err1 != nil || err2 != nil || head == up {
		return
	}
	if _, err := Git(ctx, dir, "merge-base", "--is-ancestor", head, up); err != nil {
		w.log.Info("branch has diverged from origin or is ahead; reusing worktree as-is", "branch", b)
		return
	}
	if _, err := Git(ctx, dir, "merge", "--ff-only", "--quiet", up); err != nil {
		w.log.Warn("fast-forward from origin failed; reusing worktree as-is", "branch", b, "error", err)
		return
	}
	w.log.Info("fast-forwarded worktree from origin", "path", dir, "branch", b, "from", head, "to", up)
}

// Commits lists the run's commits so far (Base..Branch), oldest first. For
// merge-to-head they are exactly the agent's commits, never host commits or
// the merge commit. Call it before Close, which may delete a temp branch.
func (w *Workspace) Commits(ctx context.Context) ([]Commit, error) {
	ref := "refs/heads/" + w.Branch
	if w.Branch == "" {
		ref = "HEAD"
	}
	return w.Repo.Commits(ctx, w.Base, ref)
}

// CloseResult says what Close left behind.
type CloseResult struct {
	// PreservedPath is the worktree kept because it has uncommitted changes
	// (or could not be checked or removed).
	PreservedPath string
	// KeptBranch is a temporary branch kept because it holds unmerged
	// commits or its worktree was preserved.
	KeptBranch string
}

// Close ends the workspace: a clean worktree is removed and a dirty one
// preserved; a temp branch is deleted once merged (if still at the tip
// merged) or when it has no commits; locks are released. It runs even when ctx is cancelled, and is
// idempotent.
func (w *Workspace) Close(ctx context.Context) (CloseResult, error) {
	if w.closed != nil {
		return *w.closed, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	defer w.releaseLocks()
	var res CloseResult
	var errs []error
	if w.Plan.Worktree && w.Dir != "" {
		switch dirty, err := Dirty(ctx, w.Dir); {
		case err != nil:
			res.PreservedPath = w.Dir
			errs = append(errs, fmt.Errorf("checking %s for uncommitted changes (kept): %w", w.Dir, err))
		case dirty:
			res.PreservedPath = w.Dir
		default:
			if err := w.Repo.removeWorktree(ctx, w.Dir); err != nil {
				res.PreservedPath = w.Dir
				errs = append(errs, err)
			}
		}
	}
	if w.Temp {
		keep := res.PreservedPath != ""
		if !keep && w.merged == "" {
			cs, err := w.Commits(ctx)
			keep = err != nil || len(cs) > 0
		}
		var err error
		switch {
		case keep:
		case w.merged != "":
			// Only if still at the tip merged: a commit made since
			// (by something the sandbox left running) is kept.
			if _, err = w.Repo.adminGit(ctx, "update-ref", "-d", "refs/heads/"+w.Branch, w.merged); err != nil {
				err = fmt.Errorf("branch %s moved after its merge, so it is kept with what was committed since: %w", w.Branch, err)
			}
		default:
			_, err = w.Repo.adminGit(ctx, "branch", "-D", w.Branch)
		}
		if keep || err != nil {
			res.KeptBranch = w.Branch
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	w.closed = &res
	return res, errors.Join(errs...)
}

// worktreeEntry is one `git worktree list --porcelain` record.
type worktreeEntry struct {
	Path   string
	Head   string // the commit checked out
	Branch string // full ref, "" when detached
	// Prunable: its directory is gone (git worktree prune removes it).
	Prunable bool
}

// CheckedOut says where branch is checked out: the worktree's path (""
// when nowhere) and whether it is one of sanddune's (under
// .sanddune/worktrees), whose files a sync may move with the branch.
func (r *Repo) CheckedOut(ctx context.Context, branch string) (dir string, managed bool, err error) {
	wts, err := r.worktrees(ctx)
	if err != nil {
		return "", false, err
	}
	wt := findBranch(wts, branch)
	if wt == nil {
		return "", false, nil
	}
	return wt.Path, within(realPath(r.StateDir("worktrees")), realPath(wt.Path)), nil
}

func findBranch(wts []worktreeEntry, branch string) *worktreeEntry {
	for i := range wts {
		if wts[i].Branch == "refs/heads/"+branch {
			return &wts[i]
		}
	}
	return nil
}

// Stamp returns the unique suffix of temp branches, worktrees and patch
// files: local time YYYYMMDD-HHMMSS plus 6 random hex digits.
func Stamp(t time.Time) string {
	return t.Format("20060102-150405") + "-" + randHex(3)
}

// SanitizeName makes a run name safe for a branch component and a file
// name: lower case, [a-z0-9_-] kept, anything else '-'.
func SanitizeName(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "run"
	}
	return s
}

func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

func samePath(a, b string) bool {
	return filepath.Clean(a) == filepath.Clean(b) || realPath(a) == realPath(b)
}

func orHEAD(s string) string {
	if s == "" {
		return "HEAD"
	}
	return s
}

func orDetached(b string) string {
	if b == "" {
		return "a detached HEAD"
	}
	return "branch " + b
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
