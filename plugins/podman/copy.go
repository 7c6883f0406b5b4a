package podman

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/missingstudio/sanddune/sdk"
)

// `podman cp` moves containerkit.Container's copies: CopyIn and CopyOut of
// a sandbox go through these.

func (s *sandbox) Stat(ctx context.Context, p string) (exists, isDir bool, err error) {
	kind, err := s.stat(ctx, p)
	return kind != "", kind == "directory", err
}

// stat reports what p is in the container, as root: "directory", another
// file type, or "" when it does not exist.
func (s *sandbox) stat(ctx context.Context, p string) (string, error) {
	out, err := s.cli.run(ctx, nil, "exec", "--user", "0:0", s.ID, "stat", "-c", "%F", "--", p)
	if err != nil {
		if exitCode(err) == 1 {
			return "", nil
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

func (s *sandbox) PutArchive(ctx context.Context, dir string, r io.Reader) error {
	_, err := s.cli.run(ctx, r, "cp", "--archive=false", "-", s.ID+":"+dir)
	return err
}

// GetArchive streams the archive `podman cp` writes; closing it waits for
// podman and reports its failure.
func (s *sandbox) GetArchive(ctx context.Context, p string) (io.ReadCloser, error) {
	if kind, err := s.stat(ctx, p); err != nil {
		return nil, err
	} else if kind == "" {
		return nil, sdk.ErrNotFound
	}
	cmd := s.cli.command(ctx, nil, "cp", s.ID+":"+p, "-")
	rc, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	out := &cpOutput{ReadCloser: rc, cmd: cmd}
	cmd.Stderr = &out.stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return out, nil
}

// cpOutput is the stdout of a running `podman cp`.
type cpOutput struct {
	io.ReadCloser
	cmd    *exec.Cmd
	stderr strings.Builder
}

func (o *cpOutput) Close() error {
	_, _ = io.Copy(io.Discard, o.ReadCloser)
	if err := o.cmd.Wait(); err != nil {
		return &cliError{args: []string{"cp"}, err: err, stderr: strings.TrimSpace(o.stderr.String())}
	}
	return nil
}

// Headers reads each path's type, owner and mode from the created
// container's root filesystem, mounted here for the purpose (`podman
// mount`): `podman cp` gives every entry the container user's ids. Only a
// rootful podman run without a user namespace, on this host (no service),
// shows the container's own ids there (hostIDs); otherwise it cannot tell.
func (s *sandbox) Headers(ctx context.Context, paths []string) ([]*tar.Header, error) {
	if !s.hostIDs {
		return nil, errors.New("podman: the container's ids are not visible here")
	}
	out, err := s.cli.run(ctx, nil, "mount", s.ID)
	if err != nil {
		return nil, err
	}
	defer func() { _, _ = s.cli.run(context.WithoutCancel(ctx), nil, "unmount", s.ID) }()
	root := strings.TrimSpace(string(out))
	hdrs := make([]*tar.Header, len(paths))
	for i, p := range paths {
		// A symlinked parent leads outside root, but is itself a path
		// whose header says so (not a directory).
		fi, err := os.Lstat(filepath.Join(root, p))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if hdrs[i], err = tar.FileInfoHeader(fi, ""); err != nil {
			return nil, err
		}
	}
	return hdrs, nil
}
