package podman

import (
	"archive/tar"
	"context"
	"io"
	"os/exec"
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

// Header reads the first header `podman cp` writes of p and closes its
// output there: podman ends at its next write instead of streaming the
// rest (binds included). A created container is mounted for the copy.
func (s *sandbox) Header(ctx context.Context, p string) (*tar.Header, error) {
	cmd := s.cli.command(ctx, nil, "cp", s.ID+":"+p, "-")
	rc, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	hdr, rerr := tar.NewReader(rc).Next()
	_ = rc.Close()
	werr := cmd.Wait()
	switch {
	case rerr == nil:
		return hdr, nil
	case strings.Contains(stderr.String(), "no such file or directory"):
		return nil, nil
	case werr == nil:
		return nil, rerr
	}
	return nil, &cliError{args: []string{"cp"}, err: werr, stderr: strings.TrimSpace(stderr.String())}
}
