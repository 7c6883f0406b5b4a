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

// Headers reads the first header of a GET archive of each path and closes
// the response there: the daemon stops writing the rest.
func (s *sandbox) Headers(ctx context.Context, paths []string) ([]*tar.Header, error) {
	hdrs := make([]*tar.Header, len(paths))
	for i, p := range paths {
		rc, err := s.GetArchive(ctx, p)
		if errors.Is(err, sdk.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		hdrs[i], err = tar.NewReader(rc).Next()
		_ = rc.Close()
		if err != nil {
			return nil, err
		}
	}
	return hdrs, nil
}
