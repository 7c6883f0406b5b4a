package docker

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// CopyIn copies a host file or directory to sandboxPath through the archive
// API. Missing parent directories are created; everything copied is owned
// by the container user.
func (s *sandbox) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	if s.isClosed() {
		return sandboxkit.ErrClosed
	}
	dst, err := s.resolvePath(sandboxPath)
	if err != nil {
		return fmt.Errorf("copy in: %w", err)
	}
	if dst == "/" {
		return fmt.Errorf("copy in: refusing to write the container root")
	}
	if _, err := os.Lstat(hostPath); err != nil {
		return fmt.Errorf("copy in: %w", err)
	}
	// Extract into the deepest existing ancestor, creating the rest.
	parent, missing := path.Dir(dst), []string(nil)
	for {
		st, err := s.cli.ContainerStatPath(ctx, s.id, parent)
		if err == nil {
			if !st.Mode.IsDir() {
				return fmt.Errorf("copy in: %s is not a directory", parent)
			}
			break
		}
		if !cerrdefs.IsNotFound(err) {
			return fmt.Errorf("copy in: stat %s: %w", parent, err)
		}
		missing = append([]string{path.Base(parent)}, missing...)
		parent = path.Dir(parent)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(s.writeTar(pw, hostPath, missing, path.Base(dst)))
	}()
	err = s.cli.CopyToContainer(ctx, s.id, parent, pr, container.CopyToContainerOptions{})
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		return fmt.Errorf("copy in %s: %w", sandboxPath, err)
	}
	return nil
}

// writeTar writes missing dirs, then hostPath under the name dirs/name.
func (s *sandbox) writeTar(w io.Writer, hostPath string, dirs []string, name string) error {
	tw := tar.NewWriter(w)
	prefix := ""
	for _, d := range dirs {
		prefix += d + "/"
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: prefix, Mode: 0o755, Uid: s.uid, Gid: s.gid}); err != nil {
			return err
		}
	}
	root := filepath.Clean(hostPath)
	if fi, err := os.Lstat(root); err == nil && !fi.IsDir() {
		// A file, or a symlink copied as a symlink (never followed, like
		// sandboxkit.Copy, so it cannot bring in a host file from elsewhere).
		if err := s.addFile(tw, root, prefix+name, fi); err != nil {
			return err
		}
		return tw.Close()
	}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		entry := prefix + name
		if rel != "." {
			entry += "/" + filepath.ToSlash(rel)
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		return s.addFile(tw, p, entry, fi)
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func (s *sandbox) addFile(tw *tar.Writer, p, name string, fi fs.FileInfo) error {
	h := &tar.Header{Name: name, Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime(), Uid: s.uid, Gid: s.gid}
	switch {
	case fi.IsDir():
		h.Typeflag, h.Name = tar.TypeDir, name+"/"
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return err
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, target
	case fi.Mode().IsRegular():
		h.Typeflag, h.Size = tar.TypeReg, fi.Size()
	default:
		return nil // sockets, devices, fifos are not copied
	}
	return writeEntry(tw, h, p)
}

// writeEntry writes h and, for a regular file, the content of p.
func writeEntry(tw *tar.Writer, h *tar.Header, p string) error {
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if h.Typeflag != tar.TypeReg {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.CopyN(tw, f, h.Size)
	return err
}

// CopyOut copies a sandbox file or directory to hostPath (the destination
// itself, not its parent). Archive entries that would land outside hostPath
// or write through a symlink are rejected.
func (s *sandbox) CopyOut(ctx context.Context, sandboxPath, hostPath string) error {
	if s.isClosed() {
		return sandboxkit.ErrClosed
	}
	src, err := s.resolvePath(sandboxPath)
	if err != nil {
		return fmt.Errorf("copy out: %w", err)
	}
	rc, _, err := s.cli.CopyFromContainer(ctx, s.id, src)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("copy out %s: %w", sandboxPath, fs.ErrNotExist)
		}
		return fmt.Errorf("copy out %s: %w", sandboxPath, err)
	}
	defer rc.Close()
	if err := extractTar(rc, filepath.Clean(hostPath)); err != nil {
		return fmt.Errorf("copy out %s: %w", sandboxPath, err)
	}
	return nil
}

// extractTar writes an archive whose entries share one top-level name (as
// the archive API returns them) to dst, replacing that name with dst.
func extractTar(r io.Reader, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(r)
	top := ""
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "/"))
		first, rest, _ := strings.Cut(name, "/")
		if top == "" {
			top = first
		}
		if first != top || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("archive entry %q escapes the destination", h.Name)
		}
		target := dst
		if rest != "" {
			target = filepath.Join(dst, filepath.FromSlash(rest))
			if !strings.HasPrefix(target, dst+string(filepath.Separator)) {
				return fmt.Errorf("archive entry %q escapes the destination", h.Name)
			}
			if err := noSymlinkBetween(dst, filepath.Dir(target)); err != nil {
				return err
			}
		}
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, mode|0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if fi, err := os.Lstat(target); err == nil && !fi.Mode().IsRegular() {
				if err := os.Remove(target); err != nil {
					return err
				}
			}
			f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			_ = os.Chmod(target, mode)
		case tar.TypeSymlink:
			_ = os.Remove(target)
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		default:
			// Hard links, devices and fifos are not copied out.
		}
	}
}

// noSymlinkBetween fails when any path component from root (exclusive) to
// dir (inclusive) is a symlink, so extraction never writes through one.
func noSymlinkBetween(root, dir string) error {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." {
		return err
	}
	p := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, part)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("archive writes through symlink %s", p)
		}
	}
	return nil
}
