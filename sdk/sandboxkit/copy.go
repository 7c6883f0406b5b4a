package sandboxkit

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/missingstudio/sanddune/sdk"
)

// CopyIn copies the host file, directory tree or symlink hostPath to p in
// the area. p's parent directories are created; p cannot be an area
// directory itself. See copyRoot for what is copied and how.
func (a Area) CopyIn(ctx context.Context, hostPath, p string) error {
	dst, rel, err := a.root(p)
	if err != nil {
		return err
	}
	defer dst.Close()
	if rel == "." {
		return fmt.Errorf("%w: cannot replace %s itself", sdk.ErrConfinement, p)
	}
	if real, err := filepath.EvalSymlinks(hostPath); err == nil && Within(filepath.Clean(p), real) {
		return fmt.Errorf("cannot copy directory %s into itself (%s)", hostPath, p)
	}
	src, err := os.OpenRoot(filepath.Dir(hostPath))
	if err != nil {
		return err
	}
	defer src.Close()
	if err := dst.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
		return confined(err)
	}
	return confined(copyRoot(ctx, src, filepath.Base(hostPath), dst, rel, false))
}

// CopyOut copies p in the area (a symlink at p is followed while it stays
// in the area) to hostPath, creating hostPath's parent directories.
func (a Area) CopyOut(ctx context.Context, p, hostPath string) error {
	src, rel, err := a.root(p)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Dir(hostPath), 0o755); err != nil {
		return err
	}
	dst, err := os.OpenRoot(filepath.Dir(hostPath))
	if err != nil {
		return err
	}
	defer dst.Close()
	return confined(copyRoot(ctx, src, rel, dst, filepath.Base(hostPath), true))
}

// copyRoot copies srcRel in src to dstRel in dst: a file, a directory tree
// or a symlink (copied as a symlink, never followed, so a link to a file
// elsewhere does not smuggle that file in; followTop follows a symlink at
// srcRel itself, inside src). Permission bits and modification times are
// kept; sockets, devices and pipes are skipped. An existing directory at
// dstRel is merged into; any other existing entry, a symlink included, is
// replaced, never followed or written through. Neither root can be left.
func copyRoot(ctx context.Context, src *os.Root, srcRel string, dst *os.Root, dstRel string, followTop bool) error {
	stat := src.Lstat
	if followTop {
		stat = src.Stat
	}
	fi, err := stat(srcRel)
	if err != nil {
		return err
	}
	return copyEntry(ctx, src, srcRel, dst, dstRel, fi)
}

func copyEntry(ctx context.Context, src *os.Root, srcRel string, dst *os.Root, dstRel string, fi fs.FileInfo) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	existing, err := dst.Lstat(dstRel)
	if err != nil && !notExist(err) {
		return err
	}
	switch mode := fi.Mode(); {
	case mode.IsDir():
		if existing != nil && !existing.IsDir() {
			if err := dst.Remove(dstRel); err != nil {
				return err
			}
			existing = nil
		}
		if existing == nil {
			err = dst.Mkdir(dstRel, 0o700)
		} else {
			err = dst.Chmod(dstRel, existing.Mode().Perm()|0o700)
		}
		if err != nil {
			return err
		}
		d, err := src.Open(srcRel)
		if err != nil {
			return err
		}
		entries, err := d.ReadDir(-1)
		d.Close()
		if err != nil {
			return err
		}
		for _, e := range entries {
			efi, err := e.Info()
			if err != nil {
				return err
			}
			if err := copyEntry(ctx, src, filepath.Join(srcRel, e.Name()), dst, filepath.Join(dstRel, e.Name()), efi); err != nil {
				return err
			}
		}
		if err := dst.Chmod(dstRel, mode.Perm()); err != nil {
			return err
		}
	case mode&fs.ModeSymlink != 0, mode.IsRegular():
		if existing != nil {
			if existing.IsDir() {
				return fmt.Errorf("cannot replace directory %s with a file", dstRel)
			}
			if err := dst.Remove(dstRel); err != nil {
				return err
			}
		}
		if mode.IsRegular() {
			if err := copyFile(src, srcRel, dst, dstRel, mode.Perm()); err != nil {
				return err
			}
			break
		}
		target, err := src.Readlink(srcRel)
		if err != nil {
			return err
		}
		return dst.Symlink(target, dstRel)
	default:
		return nil // sockets, fifos, devices
	}
	return dst.Chtimes(dstRel, fi.ModTime(), fi.ModTime())
}

// copyFile creates dstRel (which must not exist) with srcRel's content.
func copyFile(src *os.Root, srcRel string, dst *os.Root, dstRel string, perm fs.FileMode) error {
	in, err := src.Open(srcRel)
	if err != nil {
		return err
	}
	defer in.Close()
	return createFile(dst, dstRel, in, perm)
}

// createFile creates rel (which must not exist) in root with r's content
// and mode perm.
func createFile(root *os.Root, rel string, r io.Reader, perm fs.FileMode) error {
	out, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, r)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return root.Chmod(rel, perm)
}
