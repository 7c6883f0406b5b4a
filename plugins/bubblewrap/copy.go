package bubblewrap

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

// CopyIn copies a host file or directory to sandboxPath (relative paths
// are under RepoPath). The target must lie in a writable part of the
// sandbox, and the copy never writes through a symlink: symlinks already at
// the target are replaced.
func (s *sandbox) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	if s.isClosed() {
		return errClosed
	}
	dst, r, err := s.toHost(sandboxPath)
	if err != nil {
		return fmt.Errorf("copy in: %w", err)
	}
	if r.readOnly {
		return fmt.Errorf("copy in: %s is read-only in the sandbox", sandboxPath)
	}
	fi, err := os.Stat(hostPath)
	if err != nil {
		return fmt.Errorf("copy in: %w", err)
	}
	// The deepest existing ancestor must resolve inside the sandbox; the
	// directories below it are created fresh.
	anc := filepath.Dir(dst)
	for {
		if _, err := os.Lstat(anc); err == nil {
			break
		}
		anc = filepath.Dir(anc)
	}
	if _, err := s.confined(anc); err != nil {
		return fmt.Errorf("copy in: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("copy in: %w", err)
	}
	if err := copyTree(ctx, hostPath, dst, fi); err != nil {
		return fmt.Errorf("copy in: %w", err)
	}
	return nil
}

// CopyOut copies a sandbox file or directory to hostPath. The source must
// resolve inside the sandbox; symlinks below it are copied as symlinks.
func (s *sandbox) CopyOut(ctx context.Context, sandboxPath, hostPath string) error {
	if s.isClosed() {
		return errClosed
	}
	src, _, err := s.toHost(sandboxPath)
	if err != nil {
		return fmt.Errorf("copy out: %w", err)
	}
	if _, err := os.Lstat(src); err != nil {
		return fmt.Errorf("copy out: %w", err)
	}
	real, err := s.confined(src)
	if err != nil {
		return fmt.Errorf("copy out: %w", err)
	}
	fi, err := os.Lstat(real)
	if err != nil {
		return fmt.Errorf("copy out: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(hostPath), 0o755); err != nil {
		return fmt.Errorf("copy out: %w", err)
	}
	if err := copyTree(ctx, real, hostPath, fi); err != nil {
		return fmt.Errorf("copy out: %w", err)
	}
	return nil
}

// copyTree copies src (described by fi) to dst, keeping modes and copying
// symlinks as symlinks. Existing directories at dst are merged into; any
// other existing entry, symlinks included, is replaced, never followed.
// Sockets, devices and pipes are skipped.
func copyTree(ctx context.Context, src, dst string, fi fs.FileInfo) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	cur, lerr := os.Lstat(dst)
	exists := lerr == nil
	switch {
	case fi.IsDir():
		if exists && !cur.IsDir() {
			if err := os.Remove(dst); err != nil {
				return err
			}
			exists = false
		}
		if !exists {
			if err := os.Mkdir(dst, fi.Mode().Perm()|0o700); err != nil {
				return err
			}
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
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if exists {
			if err := removeEntry(dst, cur); err != nil {
				return err
			}
		}
		return os.Symlink(target, dst)
	case fi.Mode().IsRegular():
		if exists && !cur.Mode().IsRegular() {
			if err := removeEntry(dst, cur); err != nil {
				return err
			}
		}
		return copyFile(src, dst, fi.Mode().Perm())
	}
	return nil
}

func removeEntry(p string, fi fs.FileInfo) error {
	if fi.IsDir() {
		return fmt.Errorf("cannot replace directory %s with a non-directory", p)
	}
	return os.Remove(p)
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, mode)
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("refusing to write through symlink %s", dst)
	}
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}
