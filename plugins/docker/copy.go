package docker

import (
	"archive/tar"
	"context"
	"errors"
	"io"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/missingstudio/sanddune/sdk"
)

// The archive API moves containerkit.Container's copies: CopyIn and
// CopyOut of a sandbox go through these.

func (s *sandbox) Stat(ctx context.Context, p string) (exists, isDir bool, err error) {
	st, err := s.cli.ContainerStatPath(ctx, s.ID, p)
	if cerrdefs.IsNotFound(err) {
		return false, false, nil
	}
	return err == nil, err == nil && st.Mode.IsDir(), err
}

func (s *sandbox) PutArchive(ctx context.Context, dir string, r io.Reader) error {
	return s.cli.CopyToContainer(ctx, s.ID, dir, r, container.CopyToContainerOptions{})
}

func (s *sandbox) GetArchive(ctx context.Context, p string) (io.ReadCloser, error) {
	rc, _, err := s.cli.CopyFromContainer(ctx, s.ID, p)
	if cerrdefs.IsNotFound(err) {
		return nil, sdk.ErrNotFound
	}
	return rc, err
}

// Header reads the first header of GET archive and closes the response:
// the daemon stops writing the rest.
func (s *sandbox) Header(ctx context.Context, p string) (*tar.Header, error) {
	rc, err := s.GetArchive(ctx, p)
	if errors.Is(err, sdk.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return tar.NewReader(rc).Next()
}
