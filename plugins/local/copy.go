package local

import (
	"context"
	"fmt"

	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// CopyIn copies a host file or directory to sandboxPath, keeping modes and
// symlinks. Existing files are replaced, existing directories merged into;
// symlinks already in the sandbox are replaced, never followed.
func (s *sandbox) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	if s.runner.Closed() {
		return errClosed
	}
	dst, err := sandboxkit.ResolveTarget(s.abs(sandboxPath), s.root)
	if err != nil {
		return fmt.Errorf("local sandbox: %w", err)
	}
	if err := sandboxkit.Copy(ctx, hostPath, dst); err != nil {
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
	src, err := s.resolve(sandboxPath)
	if err != nil {
		return err
	}
	if err := sandboxkit.Copy(ctx, src, hostPath); err != nil {
		return fmt.Errorf("local sandbox: copy out: %w", err)
	}
	return nil
}
