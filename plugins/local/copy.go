package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// CopyIn copies a host file or directory to sandboxPath, keeping modes and
// symlinks. Existing files are replaced, existing directories merged into;
// symlinks already in the sandbox are replaced, never followed.
func (s *sandbox) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	dst, err := s.resolveTarget(sandboxPath)
	if err != nil {
		return err
	}
	if err := copyTop(ctx, hostPath, dst); err != nil {
		return fmt.Errorf("local sandbox: copy in: %w", err)
	}
	return nil
}

// CopyOut copies a sandbox file or directory to hostPath. Symlinks inside a
// copied directory are copied as symlinks.
func (s *sandbox) CopyOut(ctx context.Context, sandboxPath, hostPath string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	src, err := s.resolve(sandboxPath)
	if err != nil {
		return err
	}
	if err := copyTop(ctx, src, hostPath); err != nil {
		return fmt.Errorf("local sandbox: copy out: %w", err)
	}
	return nil
}

func (s *sandbox) checkOpen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	return nil
}

// copyTop copies src (following it if it is a symlink) to dst, creating
// dst's parent directories.
func copyTop(ctx context.Context, src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		real, err := filepath.EvalSymlinks(src)
		if err != nil {
			return err
		}
		if dst == real || strings.HasPrefix(dst, real+string(filepath.Separator)) {
			return fmt.Errorf("cannot copy directory %s into itself (%s)", src, dst)
		}
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return copyTree(ctx, src, dst, fi)
}

// copyTree copies src, described by fi, to dst without following any
// symlink at or below dst. Sockets, devices and pipes are skipped.
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
