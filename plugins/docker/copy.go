package docker

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"

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
		pw.CloseWithError(sandboxkit.WriteTar(pw, hostPath, missing, path.Base(dst), s.uid, s.gid))
	}()
	err = s.cli.CopyToContainer(ctx, s.id, parent, pr, container.CopyToContainerOptions{})
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		return fmt.Errorf("copy in %s: %w", sandboxPath, err)
	}
	return nil
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
	if err := sandboxkit.ExtractTar(rc, filepath.Clean(hostPath)); err != nil {
		return fmt.Errorf("copy out %s: %w", sandboxPath, err)
	}
	return nil
}
