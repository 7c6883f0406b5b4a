package podman

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/internal/egress"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxkit"
)

// cleanupTimeout bounds teardown work that must happen even after the
// caller's context is cancelled. It is generous: every podman command is a
// process start, slow on a loaded host, and a `podman rm` cut short leaves
// a half-removed container.
const cleanupTimeout = 2 * time.Minute

// Create starts one container for a run: `sleep infinity` under podman's
// init as the keepalive, the worktree at /home/agent/workspace, git
// metadata at the same absolute paths, the host UID:GID and
// HOME=/home/agent owned by that user.
func (p *Provider) Create(ctx context.Context, req sdk.CreateRequest) (sdk.Sandbox, error) {
	cfg, diags := decodeConfig(req.Config)
	if err := diags.Err(); err != nil {
		return nil, err
	}
	c, err := newCLI(cfg)
	if err != nil {
		return nil, err
	}
	rootless, err := c.rootless(ctx)
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
	if adj := p.checked.adjustmentFor(c, cfg, rootless, spec.Image, spec.UID, spec.GID); adj != nil {
		cfg = adj.apply(cfg)
		if c, err = newCLI(cfg); err != nil {
			return nil, err
		}
		req.Report(sdk.Progress{Message: "adjusted for this host (podman's defaults cannot start a container here; set them in the sandbox block to choose): " +
			strings.Join(adj.Settings, ", ")})
	}
	spec.OwnMounts(req, noHostMounts(cfg, rootless))
	args := []string{"create", "--name", spec.Name}
	for _, k := range slices.Sorted(maps.Keys(req.Labels)) {
		args = append(args, "--label", k+"="+req.Labels[k])
	}
	envFlags, envValues := envArgs(spec.Env)
	args = append(args, envFlags...)
	mountFlags, err := mountArgs(spec.Binds, cfg.SELinuxLabel)
	if err != nil {
		return nil, err
	}
	args = append(args, mountFlags...)
	var guard *egressGuard
	if req.Egress != nil {
		// The sandbox joins its sidecar's network namespace, fenced while
		// the sandbox is created. Without CAP_NET_RAW nothing in the
		// sandbox can put the enforcer's firewall mark on a socket of its
		// own (SO_MARK).
		if guard, err = createEgress(ctx, c, spec.Name, *req.Egress, enforcer, spec.Image, req.Labels, cfg.Networks, ulimitArgs(cfg)); err != nil {
			return nil, err
		}
		guard.start(ctx, c)
		onHost := cfg
		onHost.Networks = []string{"container:" + guard.name}
		args = append(args, "--cap-drop", "NET_RAW")
		args = append(args, containerArgs(onHost, rootless, spec.UID, spec.GID)...)
	} else {
		args = append(args, containerArgs(cfg, rootless, spec.UID, spec.GID)...)
	}
	args = append(args, "--workdir", containerkit.WorkspaceDir, "--entrypoint", "sleep", spec.From(), "infinity")
	out, err := c.runEnv(ctx, envValues, nil, args...)
	if err != nil && guard != nil {
		_ = guard.remove(context.WithoutCancel(ctx), c) // the sandbox with it, if made
	}
	if err != nil {
		if ctx.Err() != nil {
			// The container may exist: remove it by name.
			_, _ = c.run(context.WithoutCancel(ctx), nil, "rm", "--force", "--ignore", "--time", "0", spec.Name)
			return nil, ctx.Err()
		}
		if strings.Contains(err.Error(), "image not known") || strings.Contains(err.Error(), "unable to find") {
			return nil, engine.ImageNotFound(spec.Image, err)
		}
		forgetPassed(p.checked.cache)
		return nil, fmt.Errorf("create container: %w", err)
	}
	id := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(id, '\n'); i >= 0 { // warnings come first
		id = id[i+1:]
	}
	s := &sandbox{cli: c, egress: guard, hostIDs: !rootless && c.socket == "" && cfg.userns(rootless) == ""}
	s.Container = containerkit.Container{ID: id, Name: spec.Name, UID: spec.UID, GID: spec.GID, Binds: spec.Binds, Archiver: s}
	if err := s.start(ctx, spec, p.homes); err != nil {
		if ctx.Err() == nil {
			forgetPassed(p.checked.cache)
		}
		_ = s.Close(ctx)
		return nil, err
	}
	return s, nil
}

// noHostMounts says why the host's directories cannot be mounted for its
// container's user, if so.
func noHostMounts(cfg config, rootless bool) string {
	switch ns := cfg.userns(rootless); {
	case runtime.GOOS != "linux":
		return "podman runs in a VM, which may not see it"
	case cfg.Socket != "" && !strings.HasPrefix(cfg.Socket, "unix://"):
		return "podman runs on another machine"
	case ns != "keep-id" && (rootless || ns != ""): // keep-id keeps the host's ids
		return "podman maps user ids"
	}
	return ""
}

// containerArgs are the `podman create`/`run` flags that shape the
// container (user, init, limits, devices, networks, user namespace,
// ulimits): everything but the name, labels, env and mounts. Preflight's
// test container uses them too, so it starts the way a run's would.
func containerArgs(cfg config, rootless bool, uid, gid int) []string {
	args := []string{"--pull", "never", "--init", "--user", strconv.Itoa(uid) + ":" + strconv.Itoa(gid)}
	if cfg.CPUs > 0 {
		args = append(args, "--cpus", strconv.FormatFloat(cfg.CPUs, 'f', -1, 64))
	}
	if cfg.Memory > 0 {
		args = append(args, "--memory", strconv.FormatInt(cfg.Memory, 10))
	}
	if cfg.PidsLimit > 0 {
		args = append(args, "--pids-limit", strconv.FormatInt(cfg.PidsLimit, 10))
	}
	for _, d := range cfg.Devices {
		args = append(args, "--device", d.HostPath+":"+d.ContainerPath+":"+d.Permissions)
	}
	for _, n := range cfg.Networks {
		args = append(args, "--network", n)
	}
	if ns := cfg.userns(rootless); ns != "" {
		args = append(args, "--userns", ns)
	}
	return append(args, ulimitArgs(cfg)...)
}

// ulimitArgs are the --ulimit flags (the egress sidecar needs them too,
// where this host's podman cannot keep its defaults).
func ulimitArgs(cfg config) []string {
	var args []string
	for _, k := range slices.Sorted(maps.Keys(cfg.Ulimits)) {
		args = append(args, "--ulimit", k+"="+cfg.Ulimits[k])
	}
	return args
}

// mountArgs are the --mount flags of the binds.
func mountArgs(binds []containerkit.Bind, label string) ([]string, error) {
	var args []string
	for _, b := range binds {
		if strings.ContainsAny(b.Source+b.Target, ",\n") {
			return nil, fmt.Errorf("podman cannot bind-mount %q at %q: the path contains a comma", b.Source, b.Target)
		}
		m := "type=bind,source=" + b.Source + ",destination=" + b.Target
		if b.ReadOnly {
			m += ",ro=true"
		}
		switch b.Relabel(label) {
		case containerkit.LabelShared:
			m += ",relabel=shared"
		case containerkit.LabelPrivate:
			m += ",relabel=private"
		}
		args = append(args, "--mount", m)
	}
	return args, nil
}

// start creates the agent home owned by the container user (one archive
// extracted before start, ownership kept; none when the image has it:
// homes) and starts the container, once
// its egress sidecar's rules are in place.
func (s *sandbox) start(ctx context.Context, spec containerkit.Spec, homes *containerkit.Homes) error {
	if err := spec.PrepareHome(ctx, s, homes); err != nil {
		return err
	}
	if s.egress != nil {
		if err := s.egress.wait(); err != nil {
			return err
		}
	}
	if _, err := s.cli.run(ctx, nil, "start", s.ID); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	return nil
}

// sandbox is one container; containerkit.Container holds what every
// engine's does (Info, confinement, copies through `podman cp`).
type sandbox struct {
	containerkit.Container
	cli    cli
	runner sandboxkit.Runner
	egress *egressGuard // nil without an egress policy
	// hostIDs: the container's files have the same ids here (see Headers).
	hostIDs bool
}

// Close force-removes the container (SIGKILL, no stop grace period), with
// its egress sidecar (removing which removes the sandbox, joined to its
// network namespace), and ends the podman processes still attached to it.
// It is idempotent and still works when ctx is already cancelled.
func (s *sandbox) Close(ctx context.Context) error {
	return s.CloseWith(ctx, cleanupTimeout, func(ctx context.Context) error {
		if s.egress != nil {
			if err := s.egress.remove(ctx, s.cli); err != nil {
				return err
			}
		} else if err := removeContainer(ctx, s.cli, s.ID); err != nil {
			return err
		}
		s.runner.Close()
		return nil
	})
}

// removeContainer force-removes a container and those depending on it (a
// sandbox in an egress sidecar's network namespace); a missing one is not
// an error.
// A `podman rm` cut short (a timeout under load) can leave the container
// half-removed, in state "Removing": removal is checked and retried.
func removeContainer(ctx context.Context, c cli, id string) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		_, err = c.run(ctx, nil, "rm", "--force", "--depend", "--ignore", "--time", "0", id)
		if _, xerr := c.run(ctx, nil, "container", "exists", id); exitCode(xerr) == 1 {
			return nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	if err == nil {
		err = fmt.Errorf("podman rm: the container is still there")
	}
	return err
}
