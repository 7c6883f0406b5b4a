package local

import (
	"context"
	"fmt"
)

// CopyIn copies a host file or directory to sandboxPath, keeping modes and
// symlinks. Existing files are replaced, existing directories merged into;
// symlinks already in the sandbox are replaced, never followed.
func (s *sandbox) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	if s.runner.Closed() {
		return errClosed
	}
	dst, err := s.path(sandboxPath)
	if err != nil {
		return err
	}
	if err := s.area().CopyIn(ctx, hostPath, dst); err != nil {
		return fmt.Errorf("local sandbox: copy in: %w", err)
	}
	return nil
}

// CopyOut copies a sandbox file or directory to hostPath. Symlinks inside a
// copied directory are copied as symlinks.
func (s *sandbox) CopyOut(ctx context.Context, sandboxPath, hostPath string) error {
	if s.runner.Closed() {
		return errClosed
	}
	src, err := s.path(sandboxPath)
	if err != nil {
		return err
	}
	if err := s.area().CopyOut(ctx, src, hostPath); err != nil {
		return fmt.Errorf("local sandbox: copy out: %w", err)
	}
	return nil
}
