package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A linked worktree is a directory whose .git file names its admin dir,
// <common>/worktrees/<id>, holding HEAD, commondir ("../.."), gitdir (the
// path of that .git file) and, while it must not be pruned, locked
// (gitrepository-layout(5)). They are written in the order `git worktree
// add` writes them, locked first and gitdir last, so git listing the
// worktrees meanwhile skips a half-made one and `git worktree prune`
// leaves it alone.

// adminDir is where linked worktrees' admin dirs live.
func (r *Repo) adminDir() string { return filepath.Join(r.CommonDir, "worktrees") }

// worktrees lists the repository's working trees, the main one first, as
// `git worktree list --porcelain` does. It reads the admin files when the
// main working tree is Root (else it asks git).
func (r *Repo) worktrees(ctx context.Context) ([]worktreeEntry, error) {
	if r.GitDir == r.CommonDir && r.filesBackend() {
		var wts []worktreeEntry
		err := r.admin(ctx, func() (err error) {
			wts, err = r.readWorktrees()
			return err
		})
		if !errors.Is(err, errAskGit) {
			return wts, err
		}
	}
	out, err := r.adminGit(ctx, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return nil, err
	}
	return parseWorktrees(out), nil
}

func (r *Repo) readWorktrees() ([]worktreeEntry, error) {
	main := worktreeEntry{Path: r.Root}
	var err error
	if main.Branch, main.Head, err = r.head(r.CommonDir); err != nil {
		return nil, err
	}
	wts := []worktreeEntry{main}
	ids, err := os.ReadDir(r.adminDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, id := range ids {
		admin := filepath.Join(r.adminDir(), id.Name())
		b, err := readSmall(filepath.Join(admin, "gitdir"))
		if err != nil || strings.TrimSpace(string(b)) == "" {
			continue // being made or removed: git lists it not either
		}
		dotgit := strings.TrimSpace(string(b))
		if !filepath.IsAbs(dotgit) {
			dotgit = filepath.Join(admin, dotgit)
		}
		e := worktreeEntry{Path: filepath.Dir(filepath.Clean(dotgit))}
		if e.Branch, e.Head, err = r.head(admin); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		if _, err := os.Stat(dotgit); errors.Is(err, fs.ErrNotExist) && !exists(filepath.Join(admin, "locked")) {
			e.Prunable = true
		}
		wts = append(wts, e)
	}
	return wts, nil
}

// parseWorktrees reads `git worktree list --porcelain -z`.
func parseWorktrees(out string) []worktreeEntry {
	var wts []worktreeEntry
	var cur *worktreeEntry
	for _, f := range strings.Split(out, "\x00") {
		switch {
		case strings.HasPrefix(f, "worktree "):
			wts = append(wts, worktreeEntry{Path: strings.TrimPrefix(f, "worktree ")})
			cur = &wts[len(wts)-1]
		case cur == nil:
		case strings.HasPrefix(f, "HEAD "):
			cur.Head = strings.TrimPrefix(f, "HEAD ")
		case strings.HasPrefix(f, "branch "):
			cur.Branch = strings.TrimPrefix(f, "branch ")
		case f == "prunable" || strings.HasPrefix(f, "prunable "):
			cur.Prunable = true
		}
	}
	return wts
}

// addWorktree makes dir a linked worktree whose HEAD is detached at head,
// as `git worktree add --no-checkout --detach` does, then checks its files
// out with `git checkout --force` and the extra arguments (-b to make a
// branch at head, or the branch to switch to), once the admin flock is
// released, so parallel runs check out at once.
func (r *Repo) addWorktree(ctx context.Context, dir, head string, checkout ...string) error {
	var err error
	if r.plainLayout() {
		err = r.admin(ctx, func() error { return r.linkWorktree(dir, head) })
	} else {
		_, err = r.adminGit(ctx, "worktree", "add", "--quiet", "--detach", "--no-checkout", dir, head)
	}
	if err != nil {
		return fmt.Errorf("creating the worktree %s: %w", dir, err)
	}
	_, err = Git(ctx, dir, append(append(noConfigWrites, "checkout", "--force", "--quiet"), checkout...)...)
	return err
}

// plainLayout reports whether the repository uses nothing a newer git's
// `worktree add` carries into a new worktree or applies to its admin
// files — sparse checkout, per-worktree config, relative worktree paths,
// shared-repository permissions —, so that linkWorktree makes what git
// would. Otherwise git makes the worktree.
func (r *Repo) plainLayout() bool {
	for _, f := range []string{filepath.Join(r.GitDir, "info", "sparse-checkout"), filepath.Join(r.GitDir, "config.worktree")} {
		if exists(f) {
			return false
		}
	}
	b, err := readSmall(filepath.Join(r.CommonDir, "config"))
	if err != nil {
		return false
	}
	c := strings.ToLower(string(b))
	for _, key := range []string{"sparsecheckout", "worktreeconfig", "relativeworktrees", "sharedrepository", "[include"} {
		if strings.Contains(c, key) {
			return false
		}
	}
	return true
}

func (r *Repo) linkWorktree(dir, head string) (err error) {
	if err := os.MkdirAll(r.adminDir(), 0o777); err != nil {
		return err
	}
	// The id is the directory's name, numbered as git numbers it when
	// taken.
	admin := filepath.Join(r.adminDir(), filepath.Base(dir))
	for n := 1; ; n++ {
		err := os.Mkdir(admin, 0o777)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || n > 1000 {
			return err
		}
		admin = filepath.Join(r.adminDir(), fmt.Sprintf("%s%d", filepath.Base(dir), n))
	}
	madeDir := false
	defer func() {
		if err != nil {
			os.RemoveAll(admin)
			if madeDir {
				os.RemoveAll(dir)
			}
		}
	}()
	locked := filepath.Join(admin, "locked")
	if err := writeLine(locked, "initializing"); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o777); err != nil {
		return err
	}
	madeDir = true
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	realAdmin, err := filepath.EvalSymlinks(admin)
	if err != nil {
		return err
	}
	for _, f := range [][2]string{
		{filepath.Join(dir, ".git"), "gitdir: " + realAdmin},
		{filepath.Join(admin, "HEAD"), head},
		{filepath.Join(admin, "commondir"), "../.."},
		{filepath.Join(admin, "gitdir"), filepath.Join(realDir, ".git")},
	} {
		if err := writeLine(f[0], f[1]); err != nil {
			return err
		}
	}
	return os.Remove(locked)
}

func writeLine(path, s string) error {
	return os.WriteFile(path, []byte(s+"\n"), 0o666)
}

// removeWorktree removes the linked worktree at dir, which the caller
// found clean (Dirty), as `git worktree remove` does after its own status:
// its files, then its admin dir. A worktree that may be more than its
// files (locked, or holding a submodule or another repository whose
// history would go with it) is left to `git worktree remove`, which
// decides (it refuses a locked one, or one holding submodules).
func (r *Repo) removeWorktree(ctx context.Context, dir string) error {
	admin, err := r.adminOf(dir)
	if err == nil && !exists(filepath.Join(admin, "locked")) && !exists(filepath.Join(admin, "modules")) {
		var nested bool
		if nested, err = holdsRepo(dir); err == nil && !nested {
			return r.dropWorktree(ctx, dir, admin)
		}
	}
	if err != nil && !errors.Is(err, errAskGit) {
		return err
	}
	_, err = r.adminGit(ctx, "worktree", "remove", dir)
	return err
}

// dropWorktree deletes the worktree's files (outside the admin flock),
// then its admin dir, gitdir first so that nothing lists it half gone.
func (r *Repo) dropWorktree(ctx context.Context, dir, admin string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return r.admin(ctx, func() error {
		if err := os.Remove(filepath.Join(admin, "gitdir")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return os.RemoveAll(admin)
	})
}

// adminOf returns the admin dir of the linked worktree dir: the one its
// .git file names, when that is one of this repository's and names dir
// back (a sandbox can write both, but not make another worktree's admin
// dir name dir).
func (r *Repo) adminOf(dir string) (string, error) {
	admin, _, err := gitDirs(dir)
	if err != nil {
		return "", err
	}
	if filepath.Dir(realPath(admin)) != realPath(r.adminDir()) {
		return "", errAskGit
	}
	b, err := readSmall(filepath.Join(admin, "gitdir"))
	if err != nil || !samePath(strings.TrimSpace(string(b)), filepath.Join(dir, ".git")) {
		return "", errAskGit
	}
	return admin, nil
}

// holdsRepo reports whether a .git lies anywhere under dir but at its top:
// a submodule's or a nested repository's, whose history removing dir
// would lose.
func holdsRepo(dir string) (bool, error) {
	found := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" && filepath.Dir(path) != dir {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found, err
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
