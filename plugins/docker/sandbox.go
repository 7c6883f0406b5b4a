package docker

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/containerkit"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// cleanupTimeout bounds teardown work that must happen even after the
// caller's context is cancelled.
const cleanupTimeout = 30 * time.Second

// Create starts one container for a run: `sleep infinity` under docker's
// init as the keepalive, the worktree at /home/agent/workspace, git
// metadata at the same absolute paths, the host UID:GID (or
// container_uid/gid) and HOME=/home/agent owned by that user.
func (p *Provider) Create(ctx context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	cfg, diags := decodeConfig(req.Config)
	if err := diags.Err(); err != nil {
		return nil, err
	}
	cli, err := p.client()
	if err != nil {
		return nil, err
	}
	uid, gid := req.HostUID, req.HostGID
	if cfg.UID != nil {
		uid = *cfg.UID
	}
	if cfg.GID != nil {
		gid = *cfg.GID
	}
	binds, err := containerkit.Binds(req, cfg.Mounts)
	if err != nil {
		return nil, err
	}
	image := cfg.ImageFor(req.HostRepoPath)

	env := sandboxkit.MergeEnv(req.Env)
	env["HOME"] = containerkit.HomeDir

	init := true
	hostCfg := &container.HostConfig{
		Init:     &init,
		GroupAdd: cfg.Groups,
		Resources: container.Resources{
			NanoCPUs: int64(cfg.CPUs * 1e9),
			Memory:   cfg.Memory,
		},
	}
	if err := setBinds(hostCfg, binds, cfg.SELinuxLabel); err != nil {
		return nil, err
	}
	if cfg.PidsLimit > 0 {
		hostCfg.PidsLimit = &cfg.PidsLimit
	}
	for _, d := range cfg.Devices {
		hostCfg.Devices = append(hostCfg.Devices, container.DeviceMapping{
			PathOnHost: d.HostPath, PathInContainer: d.ContainerPath, CgroupPermissions: d.Permissions,
		})
	}
	if len(cfg.Networks) > 0 {
		hostCfg.NetworkMode = container.NetworkMode(cfg.Networks[0])
	}
	name := containerkit.Name(req.RunName)
	created, err := cli.ContainerCreate(ctx, &container.Config{
		Image:      image,
		User:       fmt.Sprintf("%d:%d", uid, gid),
		Env:        sandboxkit.EnvList(env),
		WorkingDir: containerkit.WorkspaceDir,
		Entrypoint: []string{"sleep"},
		Cmd:        []string{"infinity"},
		Labels:     maps.Clone(req.Labels),
	}, hostCfg, nil, nil, name)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return nil, engine.ImageNotFound(image, err)
		}
		return nil, fmt.Errorf("create container: %w", err)
	}
	s := &sandbox{cli: cli, id: created.ID, name: name, uid: uid, gid: gid, binds: binds}
	s.info = sdk.SandboxInfo{ID: created.ID, RepoPath: containerkit.WorkspaceDir, HomePath: containerkit.HomeDir, UID: &uid}

	if err := s.start(ctx, cfg, req.WorktreePath != ""); err != nil {
		_ = s.Close(ctx)
		return nil, err
	}
	return s, nil
}

// start prepares the agent home, joins extra networks and starts the container.
func (s *sandbox) start(ctx context.Context, cfg config, hasWorktree bool) error {
	var buf bytes.Buffer
	if err := containerkit.DirsTar(&buf, containerkit.OwnedDirs(s.binds, hasWorktree), s.uid, s.gid); err != nil {
		return err
	}
	if err := s.cli.CopyToContainer(ctx, s.id, "/", &buf, container.CopyToContainerOptions{}); err != nil {
		return fmt.Errorf("prepare %s: %w", containerkit.HomeDir, err)
	}
	for _, n := range cfg.Networks[min(1, len(cfg.Networks)):] {
		if err := s.cli.NetworkConnect(ctx, n, s.id, nil); err != nil {
			return fmt.Errorf("connect to network %q: %w", n, err)
		}
	}
	if err := s.cli.ContainerStart(ctx, s.id, container.StartOptions{}); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	return nil
}

// setBinds mounts the binds: through the Mounts API, or, to relabel them
// for SELinux (which only the legacy Binds strings can ask for), as
// src:dst[:ro,z] strings.
func setBinds(hc *container.HostConfig, binds []containerkit.Bind, label string) error {
	for _, b := range binds {
		if label == containerkit.LabelNone {
			hc.Mounts = append(hc.Mounts, mount.Mount{Type: mount.TypeBind, Source: b.Source, Target: b.Target, ReadOnly: b.ReadOnly})
			continue
		}
		if strings.Contains(b.Source+b.Target, ":") {
			return fmt.Errorf("cannot relabel %q for SELinux: docker cannot bind a path holding a colon with a label; set selinux_label = false", b.Source)
		}
		opts := b.Relabel(label)
		if b.ReadOnly {
			opts = "ro," + opts
		}
		hc.Binds = append(hc.Binds, b.Source+":"+b.Target+":"+opts)
	}
	return nil
}

// sandbox is one container.
type sandbox struct {
	cli      *client.Client
	id, name string
	uid, gid int
	binds    []containerkit.Bind
	info     sdk.SandboxInfo

	mu     sync.Mutex
	closed bool
}

func (s *sandbox) Info() sdk.SandboxInfo { return s.info }

func (s *sandbox) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Close force-removes the container (SIGKILL, no stop grace period). It is
// idempotent and still works when ctx is already cancelled.
func (s *sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	err := s.cli.ContainerRemove(ctx, s.id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress") {
		// Someone else (docker rm -f) is removing it: wait for that.
		wait, errc := s.cli.ContainerWait(ctx, s.id, container.WaitConditionRemoved)
		select {
		case <-wait:
			err = nil
		case err = <-errc:
		}
	}
	if err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove container %s: %w", s.name, err)
	}
	s.closed = true
	return nil
}

func (s *sandbox) resolvePath(p string) (string, error) { return containerkit.ResolvePath(p, s.binds) }

var _ sdk.TTYSandbox = (*sandbox)(nil)
