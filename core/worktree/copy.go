package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// CopySource is one validated copy_to_worktree path.
type CopySource struct {
	Rel      string // cleaned, slash-separated, relative to the repo root
	HostPath string // absolute host path
}

// CheckRelPath validates a copy_to_worktree path: relative to the repo root,
// not escaping it, not inside .git. It returns the cleaned slash form.
func CheckRelPath(rel string) (string, error) {
	if rel == "" {
		return "", errors.New("copy_to_worktree: empty path")
	}
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") {
		return "", fmt.Errorf("copy_to_worktree: %q must be relative to the repo root", rel)
	}
	c := filepath.ToSlash(filepath.Clean(rel))
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("copy_to_worktree: %q is outside the repo", rel)
	}
	if first, _, _ := strings.Cut(c, "/"); first == ".git" {
		return "", fmt.Errorf("copy_to_worktree: %q is inside .git", rel)
	}
	if HoldsWorktrees(c) {
		return "", fmt.Errorf("copy_to_worktree: %q holds %s/worktrees, where the copy goes: it would copy into itself", rel, StateDirName)
	}
	return c, nil
}

// HoldsWorktrees reports whether the repo-relative path rel is, holds or is
// inside the directory of run worktrees (.sanddune/worktrees): copying it
// into a worktree would copy the copy into itself.
func HoldsWorktrees(rel string) bool {
	c := filepath.ToSlash(filepath.Clean(rel))
	w := StateDirName + "/worktrees"
	return c == w || strings.HasPrefix(w, c+"/") || strings.HasPrefix(c, w+"/")
}

// CopySources validates rels against the repo at root and returns the ones
// that exist (skipped lists the missing ones). A path reached through a
// symlink that leaves the repo is an error. Isolated runs copy each source
// into the sandbox with Sandbox.CopyIn.
func CopySources(root string, rels []string) (sources []CopySource, skipped []string, err error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	for _, rel := range rels {
		c, err := CheckRelPath(rel)
		if err != nil {
			return nil, nil, err
		}
		// Resolve the parent through the root: symlinked parents must stay inside.
		if dir := filepath.Dir(filepath.FromSlash(c)); dir != "." {
			if _, err := r.Stat(dir); err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					skipped = append(skipped, c)
					continue
				}
				return nil, nil, fmt.Errorf("copy_to_worktree: %s: %w", c, err)
			}
		}
		if _, err := r.Lstat(filepath.FromSlash(c)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				skipped = append(skipped, c)
				continue
			}
			return nil, nil, fmt.Errorf("copy_to_worktree: %s: %w", c, err)
		}
		sources = append(sources, CopySource{Rel: c, HostPath: filepath.Join(root, filepath.FromSlash(c))})
	}
	return sources, skipped, nil
}

// CopyPaths copies repo-relative paths (files or directories, ignored ones
// like node_modules included) from srcRoot into the same place under
// dstRoot: plain copies keeping permission bits, modification times and
// symlinks (copied as links, never followed). Missing sources are skipped
// and returned. Neither side can be escaped through symlinks; sockets and
// devices are skipped. Cancelling ctx stops the copy between files and
// within large ones.
func CopyPaths(ctx context.Context, srcRoot, dstRoot string, rels []string) (skipped []string, err error) {
	sources, skipped, err := CopySources(srcRoot, rels)
	if err != nil {
		return nil, err
	}
	src, err := os.OpenRoot(srcRoot)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, err := os.OpenRoot(dstRoot)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	for _, s := range sources {
		rel := filepath.FromSlash(s.Rel)
		if dir := filepath.Dir(rel); dir != "." {
			if err := dst.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("copy_to_worktree: %s: %w", s.Rel, err)
			}
		}
		if err := copyTree(ctx, src, dst, rel); err != nil {
			return nil, fmt.Errorf("copy_to_worktree: %s: %w", s.Rel, err)
		}
	}
	return skipped, nil
}

func copyTree(ctx context.Context, src, dst *os.Root, rel string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	fi, err := src.Lstat(rel)
	if err != nil {
		return err
	}
	switch mode := fi.Mode(); {
	case mode.IsDir():
		if cur, err := dst.Lstat(rel); err == nil && !cur.IsDir() {
			if err := dst.Remove(rel); err != nil {
				return err
			}
		}
		if err := dst.Mkdir(rel, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		d, err := src.Open(rel)
		if err != nil {
			return err
		}
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := copyTree(ctx, src, dst, filepath.Join(rel, n)); err != nil {
				return err
			}
		}
		if err := dst.Chmod(rel, mode.Perm()); err != nil {
			return err
		}
	case mode&fs.ModeSymlink != 0:
		target, err := src.Readlink(rel)
		if err != nil {
			return err
		}
		if err := removeExisting(dst, rel); err != nil {
			return err
		}
		return dst.Symlink(target, rel)
	case mode.IsRegular():
		if err := removeExisting(dst, rel); err != nil {
			return err
		}
		if err := copyFile(ctx, src, dst, rel, mode.Perm()); err != nil {
			return err
		}
	default:
		return nil // sockets, fifos, devices
	}
	return dst.Chtimes(rel, fi.ModTime(), fi.ModTime())
}

// removeExisting removes a non-directory at rel so that it is replaced,
// not written through (a symlink could point elsewhere in the tree).
func removeExisting(dst *os.Root, rel string) error {
	fi, err := dst.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return dst.RemoveAll(rel)
	}
	return dst.Remove(rel)
}

func copyFile(ctx context.Context, src, dst *os.Root, rel string, perm fs.FileMode) error {
	in, err := src.Open(rel)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := dst.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, ctxReader{ctx, in})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return dst.Chmod(rel, perm)
}

// ctxReader fails reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
