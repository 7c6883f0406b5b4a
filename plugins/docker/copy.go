package docker

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/missingstudio/sanddune/sdk/containerkit"
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
	parent, missing, err := containerkit.CopyInTarget(ctx, hostPath, dst, func(ctx context.Context, p string) (bool, bool, error) {
		st, err := s.cli.ContainerStatPath(ctx, s.id, p)
		if cerrdefs.IsNotFound(err) {
			return false, false, nil
		}
		return err == nil, err == nil && st.Mode.IsDir(), err
	})
	if err != nil {
		return fmt.Errorf("copy in: %w", err)
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
