package containerkit

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// Spec is what a run's container is made of, whatever the engine: its
// name, image, environment (the run's, HOME the agent home), binds and the
// user it runs as (the host's; an engine may override it).
type Spec struct {
	Name, Image string
	// ImageID is Image's id as preflight found it (Homes.ImageID), ""
	// when unknown; the engine makes the container from it when set.
	ImageID     string
	Env         map[string]string
	Binds       []Bind
	UID, GID    int
	hasWorktree bool
}

// NewSpec works out the container a CreateRequest asks for under c.
func NewSpec(req sdk.CreateRequest, c Config) (Spec, error) {
	binds, err := Binds(req, c.Mounts)
	if err != nil {
		return Spec{}, err
	}
	env := sandboxkit.MergeEnv(req.Env)
	env["HOME"] = HomeDir
	return Spec{
		Name: Name(req.RunName), Image: c.ImageFor(req.HostRepoPath), Env: env, Binds: binds,
		UID: req.HostUID, GID: req.HostGID, hasWorktree: req.WorktreePath != "",
	}, nil
}

// OwnMounts makes the host directory of each bind the host asked for
// (CreateRequest.Mounts) writable by the container user: owned by it
// already, or given to it when this process runs as root. One it cannot
// make so is left out, and reported: the host then copies instead. When
// unable says why none can be (the engine maps user ids, so a host owner
// says nothing about the container's; it runs on another machine or in a
// VM, which may not see the directory), all are left out, unreported: a
// fact of the host, not of the run. Call it once the user is final.
func (s *Spec) OwnMounts(req sdk.CreateRequest, unable string) {
	kept := s.Binds[:0:0]
	for _, b := range s.Binds {
		if b.Asked && unable != "" {
			continue
		}
		if b.Asked {
			if err := own(b.Source, s.UID, s.GID); err != nil {
				req.Report(sdk.Progress{Message: fmt.Sprintf("not mounting %s at %s (%v): copying instead", b.Source, b.Target, err)})
				continue
			}
		}
		kept = append(kept, b)
	}
	s.Binds = kept
}

func own(dir string, uid, gid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir() || !ok:
		return errors.New("not a directory")
	case int(st.Uid) == uid:
		return nil
	case os.Geteuid() != 0:
		return fmt.Errorf("owned by uid %d, not the container user %d", st.Uid, uid)
	}
	return os.Lchown(dir, uid, gid)
}

// PrepareHome creates, in a created container before it starts, the agent
// home's directories owned by the container user (OwnedDirs, one archive
// extracted at "/"), unless the image already has them so (homeFits). That
// is learnt once per image id (ImageID, "" when unknown: then the home is
// prepared without asking) from the container itself, and remembered in h.
func (s Spec) PrepareHome(ctx context.Context, a Archiver, h *Homes) error {
	dirs := OwnedDirs(s.Binds, s.hasWorktree)
	if s.ImageID != "" {
		key := h.factKey(s.ImageID, s.UID, s.GID, dirs)
		if fits, _ := h.fact(ctx, key, func() (bool, error) { return homeFits(ctx, a, dirs, s.UID, s.GID) }); fits {
			return nil
		}
	}
	var buf bytes.Buffer
	if err := DirsTar(&buf, dirs, s.UID, s.GID); err != nil {
		return err
	}
	if err := a.PutArchive(ctx, "/", &buf); err != nil {
		return fmt.Errorf("prepare %s: %w", HomeDir, err)
	}
	return nil
}

// From is what the container is made from: ImageID when known (the very
// image preflight checked), else Image.
func (s Spec) From() string {
	if s.ImageID != "" {
		return s.ImageID
	}
	return s.Image
}

// Archiver is what an engine does for a container's copies: the archive
// calls of its API or CLI.
type Archiver interface {
	// Stat reports whether a container path exists and is a directory.
	Stat(ctx context.Context, p string) (exists, isDir bool, err error)
	// PutArchive extracts the tar stream r at the container directory dir,
	// keeping the owners the archive names.
	PutArchive(ctx context.Context, dir string, r io.Reader) error
	// GetArchive streams p as a tar archive (fs.ErrNotExist where p is
	// missing); Close reports a failure of the transfer.
	GetArchive(ctx context.Context, p string) (io.ReadCloser, error)
	// Headers reports the type, owner and mode of each path as the
	// container sees them (tar headers, as an archive of the path would
	// start; nil where it is missing), in a created container before it
	// starts, reading nothing else; an error where the engine cannot tell.
	Headers(ctx context.Context, paths []string) ([]*tar.Header, error)
}

// Container is the engine-independent half of one container sandbox:
// embedded in the engine's sandbox, it gives Info, confinement, the copies
// (through Archiver) and the closed state.
type Container struct {
	ID, Name string
	UID, GID int // the user commands run as
	Binds    []Bind
	Archiver Archiver

	mu     sync.Mutex
	closed bool
}

// Info describes the sandbox: the workspace and home of the fixed layout,
// and the host's mounts in place.
func (c *Container) Info() sdk.SandboxInfo {
	uid := c.UID
	var ms []sdk.Mount
	for _, b := range c.Binds {
		if b.Asked {
			ms = append(ms, sdk.Mount{HostPath: b.Source, SandboxPath: b.Target, ReadOnly: b.ReadOnly})
		}
	}
	return sdk.SandboxInfo{ID: c.ID, RepoPath: WorkspaceDir, HomePath: HomeDir, UID: &uid, Mounts: ms}
}

// Closed reports whether Close removed the container.
func (c *Container) Closed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// CloseWith removes the container once: remove gets a context that
// survives ctx's cancellation, bounded by timeout. Until remove succeeds,
// the container counts as open (Close may be called again).
func (c *Container) CloseWith(ctx context.Context, timeout time.Duration, remove func(context.Context) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := remove(ctx); err != nil {
		return fmt.Errorf("remove container %s: %w", c.Name, err)
	}
	c.closed = true
	return nil
}

// ResolvePath confines a sandbox path (ResolvePath over the binds).
func (c *Container) ResolvePath(p string) (string, error) { return ResolvePath(p, c.Binds) }

// PrepareExec checks an exec request against an open container: its argv
// (a shell string runs under sh) and its confined working directory.
func (c *Container) PrepareExec(req sdk.ExecRequest) (argv []string, cwd string, err error) {
	if c.Closed() {
		return nil, "", sandboxkit.ErrClosed
	}
	if argv, err = sandboxkit.Argv(req, "sh"); err != nil {
		return nil, "", err
	}
	if cwd, err = c.ResolvePath(req.Cwd); err != nil {
		return nil, "", fmt.Errorf("exec: cwd: %w", err)
	}
	return argv, cwd, nil
}

// copyPath confines the sandbox path of a copy (op) into an open container.
func (c *Container) copyPath(op, p string) (string, error) {
	if c.Closed() {
		return "", sandboxkit.ErrClosed
	}
	abs, err := c.ResolvePath(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w", op, err)
	}
	return abs, nil
}

// CopyIn copies a host file or directory to sandboxPath from an archive.
// Missing parent directories are created; everything copied is owned by
// the container user.
func (c *Container) CopyIn(ctx context.Context, hostPath, sandboxPath string) error {
	dst, err := c.copyPath("copy in", sandboxPath)
	if err != nil {
		return err
	}
	parent, missing, err := CopyInTarget(ctx, hostPath, dst, c.Archiver.Stat)
	if err != nil {
		return fmt.Errorf("copy in: %w", err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(sandboxkit.WriteTar(pw, hostPath, missing, path.Base(dst), c.UID, c.GID))
	}()
	err = c.Archiver.PutArchive(ctx, parent, pr)
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		return fmt.Errorf("copy in %s: %w", sandboxPath, err)
	}
	return nil
}

// CopyOut copies a sandbox file or directory to hostPath (the destination
// itself, not its parent). Archive entries that would land outside
// hostPath or write through a symlink are rejected.
func (c *Container) CopyOut(ctx context.Context, sandboxPath, hostPath string) error {
	src, err := c.copyPath("copy out", sandboxPath)
	if err != nil {
		return err
	}
	rc, err := c.Archiver.GetArchive(ctx, src)
	if err != nil {
		return fmt.Errorf("copy out %s: %w", sandboxPath, err)
	}
	xerr := sandboxkit.ExtractTar(rc, filepath.Clean(hostPath))
	if err := rc.Close(); err != nil {
		return fmt.Errorf("copy out %s: %w", sandboxPath, err)
	}
	if xerr != nil {
		return fmt.Errorf("copy out %s: %w", sandboxPath, xerr)
	}
	return nil
}
