package podman

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/missingstudio/sanddune/sdk/containerkit"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// CopyIn copies a host file or directory to sandboxPath with `podman cp`
// from an archive. Missing parent directories are created; everything
// copied is owned by the container user.
func (s *sandbox) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	if s.isClosed() {
		return sandboxkit.ErrClosed
	}
	dst, err := s.resolvePath(sandboxPath)
	if err != nil {
		return fmt.Errorf("copy in: %w", err)
	}
	parent, missing, err := containerkit.CopyInTarget(ctx, hostPath, dst, func(ctx context.Context, p string) (bool, bool, error) {
		kind, err := s.stat(ctx, p)
		return kind != "", kind == "directory", err
	})
	if err != nil {
		return fmt.Errorf("copy in: %w", err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(sandboxkit.WriteTar(pw, hostPath, missing, path.Base(dst), s.uid, s.gid))
	}()
	_, err = s.cli.run(ctx, pr, "cp", "--archive=false", "-", s.id+":"+parent)
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		return fmt.Errorf("copy in %s: %w", sandboxPath, err)
	}
	return nil
}

// stat reports what p is in the container, as the container user:
// "directory", another file type, or "" when it does not exist.
func (s *sandbox) stat(ctx context.Context, p string) (string, error) {
	out, err := s.cli.run(ctx, nil, "exec", "--user", "0:0", s.id, "stat", "-c", "%F", "--", p)
	if err != nil {
		if exitCode(err) == 1 {
			return "", nil
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// CopyOut copies a sandbox file or directory to hostPath (the destination
// itself, not its parent) from the archive `podman cp` writes. Archive
// entries that would land outside hostPath or write through a symlink are
// rejected.
func (s *sandbox) CopyOut(ctx context.Context, sandboxPath, hostPath string) error {
	if s.isClosed() {
		return sandboxkit.ErrClosed
	}
	src, err := s.resolvePath(sandboxPath)
	if err != nil {
		return fmt.Errorf("copy out: %w", err)
	}
	if kind, err := s.stat(ctx, src); err != nil {
		return fmt.Errorf("copy out %s: %w", sandboxPath, err)
	} else if kind == "" {
		return fmt.Errorf("copy out %s: %w", sandboxPath, fs.ErrNotExist)
	}
	cmd := s.cli.command(ctx, nil, "cp", s.id+":"+src, "-")
	rc, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("copy out %s: %w", sandboxPath, err)
	}
	xerr := sandboxkit.ExtractTar(rc, filepath.Clean(hostPath))
	_, _ = io.Copy(io.Discard, rc)
	werr := cmd.Wait()
	switch {
	case werr != nil:
		return fmt.Errorf("copy out %s: %w", sandboxPath, &cliError{args: []string{"cp"}, err: werr, stderr: strings.TrimSpace(stderr.String())})
	case xerr != nil:
		return fmt.Errorf("copy out %s: %w", sandboxPath, xerr)
	}
	return nil
}
