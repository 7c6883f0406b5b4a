package sandboxkit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Copy copies src to dst: a file, a directory tree or a symlink (copied as
// a symlink, never followed, so a link to a file outside the copied tree
// does not smuggle that file in). Permission bits are kept; sockets,
// devices and pipes are skipped. dst's
// parent directories are created. An existing directory at dst is merged
// into; any other existing entry, a symlink included, is replaced, never
// followed or written through. Copying a directory into itself fails.
//
// Copy does not confine anything: resolve dst (CopyIn) or src (CopyOut)
// with ResolveTarget or Resolve first.
func Copy(ctx context.Context, src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		real, err := filepath.EvalSymlinks(src)
		if err != nil {
			return err
		}
		if Within(dst, real) {
			return fmt.Errorf("cannot copy directory %s into itself (%s)", src, dst)
		}
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return copyTree(ctx, src, dst, fi)
}

// copyTree copies src, described by fi, to dst without following any
// symlink at or below dst.
func copyTree(ctx context.Context, src, dst string, fi fs.FileInfo) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	existing, err := os.Lstat(dst)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	switch {
	case fi.IsDir():
		if existing != nil && !existing.IsDir() {
			if err := os.Remove(dst); err != nil {
				return err
			}
			existing = nil
		}
		if existing == nil {
			err = os.Mkdir(dst, 0o700)
		} else {
			err = os.Chmod(dst, existing.Mode().Perm()|0o700)
		}
		if err != nil {
			return err
		}
		entries, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range entries {
			efi, err := e.Info()
			if err != nil {
				return err
			}
			if err := copyTree(ctx, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), efi); err != nil {
				return err
			}
		}
		return os.Chmod(dst, fi.Mode().Perm())
	case fi.Mode()&fs.ModeSymlink != 0, fi.Mode().IsRegular():
		if existing != nil {
			if existing.IsDir() {
				return fmt.Errorf("cannot replace directory %s with a file", dst)
			}
			if err := os.Remove(dst); err != nil {
				return err
			}
		}
		if fi.Mode().IsRegular() {
			return copyFile(src, dst, fi.Mode().Perm())
		}
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	return nil
}

// copyFile creates dst (which must not exist) with src's content.
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Chmod(perm); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
