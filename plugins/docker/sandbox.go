package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"

	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/internal/egress"
	"github.com/missingstudio/sanddune/sdk"
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
	var enforcer string
	if req.Egress != nil {
		if enforcer, err = egress.Binary(); err != nil {
			return nil, err
		}
	}
	spec, err := containerkit.NewSpec(req, cfg.Config)
	if err != nil {
		return nil, err
	}
	spec.ImageID = p.homes.ImageID(spec.Image)
	if cfg.UID != nil {
		spec.UID = *cfg.UID
	}
	if cfg.GID != nil {
		spec.GID = *cfg.GID
	}
	noMounts, asked := p.noMounts.Load().(string)
	if !asked {
		noMounts = "no preflight asked the Docker daemon how it runs"
	}
	spec.OwnMounts(req, noMounts)

	init := true
	hostCfg := &container.HostConfig{
		Init:     &init,
		GroupAdd: cfg.Groups,
		Resources: container.Resources{
			NanoCPUs: int64(cfg.CPUs * 1e9),
			Memory:   cfg.Memory,
		},
	}
	if err := setBinds(hostCfg, spec.Binds, cfg.SELinuxLabel); err != nil {
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
	var guard *egressGuard
	switch {
	case req.Egress != nil:
		// The sandbox joins its sidecar's network namespace, which is
		// made and fenced while the sandbox is created. Without
		// CAP_NET_RAW nothing in the sandbox can put the enforcer's
		// firewall mark on a socket of its own (SO_MARK).
		guard = startEgress(ctx, cli, spec.Name, *req.Egress, enforcer, spec.Image, req.Labels, cfg.Networks)
		hostCfg.NetworkMode = container.NetworkMode("container:" + guard.name)
		hostCfg.CapDrop = []string{"NET_RAW"}
	case len(cfg.Networks) > 0:
		hostCfg.NetworkMode = container.NetworkMode(cfg.Networks[0])
	}
	// The create request is not cancelled with ctx: the daemon would go on
	// creating a container we no longer know of (a Ctrl-C during Create
	// left it behind). Once we know its id, start fails on a cancelled ctx
	// and Close removes it.
	createCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	created, err := cli.ContainerCreate(createCtx, &container.Config{
		Image:      spec.From(),
		User:       fmt.Sprintf("%d:%d", spec.UID, spec.GID),
		Env:        sandboxkit.EnvList(spec.Env),
		WorkingDir: containerkit.WorkspaceDir,
		Entrypoint: []string{"sleep"},
		Cmd:        []string{"infinity"},
		Labels:     maps.Clone(req.Labels),
	}, hostCfg, nil, nil, spec.Name)
	if err != nil {
		if guard != nil {
			_ = guard.remove(context.WithoutCancel(ctx))
		}
		if cerrdefs.IsNotFound(err) {
			return nil, engine.ImageNotFound(spec.Image, err)
		}
		return nil, fmt.Errorf("create container: %w", err)
	}
	s := &sandbox{cli: cli, egress: guard}
	s.Container = containerkit.Container{ID: created.ID, Name: spec.Name, UID: spec.UID, GID: spec.GID, Binds: spec.Binds, Archiver: s}
	if err = s.start(ctx, spec, p.homes, cfg.Networks); err != nil {
		_ = s.Close(ctx)
		return nil, err
	}
	if err := ctx.Err(); err != nil { // cancelled as the start finished
		_ = s.Close(ctx)
		return nil, err
	}
	return s, nil
}

// start prepares the agent home (unless the image has it: homes), joins
// extra networks (its egress sidecar's network namespace instead, once the
// sidecar is up) and starts the container.
func (s *sandbox) start(ctx context.Context, spec containerkit.Spec, homes *containerkit.Homes, networks []string) error {
	if err := spec.PrepareHome(ctx, s, homes); err != nil {
		return err
	}
	if s.egress != nil {
		if err := s.egress.wait(); err != nil {
			return err
		}
		networks = nil
	}
	if err := connectNetworks(ctx, s.cli, s.ID, networks); err != nil {
		return err
	}
	if err := s.cli.ContainerStart(ctx, s.ID, container.StartOptions{}); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	return nil
}

// connectNetworks connects created container id to the networks after the
// first (its network mode).
func connectNetworks(ctx context.Context, cli *client.Client, id string, networks []string) error {
	for _, n := range networks[min(1, len(networks)):] {
		if err := cli.NetworkConnect(ctx, n, id, nil); err != nil {
			return fmt.Errorf("connect to network %q: %w", n, err)
		}
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

// sandbox is one container; containerkit.Container holds what every
// engine's does (Info, confinement, copies through the archive API).
type sandbox struct {
	containerkit.Container
	cli    *client.Client
	egress *egressGuard // nil without an egress policy
}

// Close force-removes the container (SIGKILL, no stop grace period) and
// its egress sidecar at once: the rules stay in the network namespace the
// sandbox joined, so without the sidecar the sandbox reaches nothing. It
// is idempotent and still works when ctx is already cancelled.
func (s *sandbox) Close(ctx context.Context) error {
	return s.CloseWith(ctx, cleanupTimeout, func(ctx context.Context) error {
		if s.egress == nil {
			return removeContainer(ctx, s.cli, s.ID)
		}
		sidecar := make(chan error, 1)
		go func() { sidecar <- s.egress.remove(ctx) }()
		err := removeContainer(ctx, s.cli, s.ID)
		return errors.Join(err, <-sidecar)
	})
}

// removeContainer force-removes container id; one already gone, or gone
// once the removal someone else started (docker rm -f, another gc) ends,
// is not an error.
func removeContainer(ctx context.Context, cli *client.Client, id string) error {
	err := cli.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress") {
		wait, errc := cli.ContainerWait(ctx, id, container.WaitConditionRemoved)
		select {
		case <-wait:
			err = nil
		case err = <-errc:
		}
	}
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	return err
}

var _ sdk.TTYSandbox = (*sandbox)(nil)
