package bubblewrap

import (
	"context"
	"fmt"

	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// CopyIn copies a host file or directory to sandboxPath (relative paths
// are under RepoPath). The target must lie in a writable part of the
// sandbox, and the copy never writes through a symlink: symlinks already at
// the target are replaced.
func (s *sandbox) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	if s.runner.Closed() {
		return sandboxkit.ErrClosed
	}
	dst, r, err := s.toHost(sandboxPath)
	if err != nil {
		return fmt.Errorf("copy in: %w", err)
	}
	if r.readOnly {
		return fmt.Errorf("copy in: %s is read-only in the sandbox", sandboxPath)
	}
	if err := s.hostRoots(true).CopyIn(ctx, hostPath, dst); err != nil {
		return fmt.Errorf("copy in: %w", err)
	}
	return nil
}

// CopyOut copies a sandbox file or directory to hostPath. The source must
// resolve inside the sandbox; symlinks below it are copied as symlinks.
func (s *sandbox) CopyOut(ctx context.Context, sandboxPath, hostPath string) error {
	if s.runner.Closed() {
		return sandboxkit.ErrClosed
	}
	src, _, err := s.toHost(sandboxPath)
	if err != nil {
		return fmt.Errorf("copy out: %w", err)
	}
	if err := s.hostRoots(false).CopyOut(ctx, src, hostPath); err != nil {
		return fmt.Errorf("copy out: %w", err)
	}
	return nil
}
