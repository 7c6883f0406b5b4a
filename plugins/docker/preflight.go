package docker

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"

	"github.com/missingstudio/sanddune/sdk"
)

// Preflight checks, pass or fail, that a container can be created with this
// config: the daemon answers, the image exists, its user fits the UID the
// container runs as, and every requested limit, network, device and mount
// can be honoured. Each failure says what to do about it.
func (p *Provider) Preflight(ctx context.Context, req sdk.PreflightRequest) error {
	cfg, diags := decodeConfig(req.Config)
	if err := diags.Err(); err != nil {
		return err
	}
	cli, err := p.client()
	if err != nil {
		return fmt.Errorf("docker client: %w", err)
	}
	ping, err := cli.Ping(ctx)
	if err != nil {
		return fmt.Errorf("the Docker daemon at %s is not reachable: start Docker (e.g. `sudo systemctl start docker`, or run `dockerd`) or set DOCKER_HOST: %w",
			cli.DaemonHost(), err)
	}
	cli.NegotiateAPIVersionPing(ping) // no second ping on the first request
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	uid := req.HostUID
	if cfg.UID != nil {
		uid = *cfg.UID
	}
	image := cfg.ImageFor(req.HostRepoPath)
	// The image and the daemon are asked at once: one round trip.
	var info system.Info
	var infoErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		info, infoErr = cli.Info(ctx)
	}()
	img, err := cli.ImageInspect(ctx, image)
	<-done
	switch {
	case cerrdefs.IsNotFound(err):
		fail("image %q not found locally: build it with `%s`", image, engine.BuildImageFix(cfg.Config, image))
	case err != nil:
		fail("inspect image %q: %w", image, err)
	default:
		p.homes.Inspected(image, img.ID)
		user := ""
		if img.Config != nil {
			user, _, _ = strings.Cut(img.Config.User, ":")
		}
		if n, err := strconv.Atoi(user); err == nil && n != uid {
			fail("UID mismatch: image %q was built for UID %d, but the sandbox runs as UID %d: rebuild it with `sanddune docker build-image` (which passes your UID), or set container_uid = %d",
				image, n, uid, n)
		}
	}

	if infoErr != nil {
		return fmt.Errorf("docker info: %w", infoErr)
	}
	p.noMounts.Store(noHostMounts(info, cli.DaemonHost()))
	if info.InitBinary == "" {
		fail("the Docker daemon has no init binary (docker-init): install it (Debian: the tini package) or use a daemon that ships it")
	}
	if cfg.Memory > 0 && !info.MemoryLimit {
		fail("memory is set but this Docker daemon cannot enforce memory limits (cgroup memory controller missing): remove memory or enable the controller")
	}
	if cfg.CPUs > 0 {
		if !info.CPUCfsQuota {
			fail("cpus is set but this Docker daemon cannot enforce CPU limits (CFS quota unsupported): remove cpus")
		} else if info.NCPU > 0 && cfg.CPUs > float64(info.NCPU) {
			fail("cpus = %g exceeds the %d CPUs of the Docker host: lower cpus", cfg.CPUs, info.NCPU)
		}
	}
	if cfg.PidsLimit > 0 && !info.PidsLimit {
		fail("pids_limit is set but this Docker daemon cannot enforce it (pids cgroup missing): remove pids_limit")
	}
	for _, n := range cfg.Networks {
		if _, err := cli.NetworkInspect(ctx, n, network.InspectOptions{}); err != nil {
			if cerrdefs.IsNotFound(err) {
				fail("docker network %q does not exist: create it with `docker network create %s` or fix network", n, n)
			} else {
				fail("inspect network %q: %w", n, err)
			}
		}
	}
	errs = append(errs, cfg.CheckHostPaths(req.HostRepoPath, daemonIsLocal(cli.DaemonHost()))...)
	return errors.Join(errs...)
}

// noHostMounts says why the daemon at host cannot mount the host's
// directories for its containers' user, if so: it maps user ids
// (rootless, userns-remap), runs on another machine or in a VM.
func noHostMounts(info system.Info, host string) string {
	switch {
	case slices.ContainsFunc(info.SecurityOptions, func(o string) bool {
		return strings.Contains(o, "name=rootless") || strings.Contains(o, "name=userns")
	}):
		return "the Docker daemon maps user ids"
	case !daemonIsLocal(host):
		return "the Docker daemon runs on another machine"
	case runtime.GOOS != "linux" || info.OperatingSystem == "Docker Desktop":
		return "the Docker daemon runs in a VM, which may not see it"
	}
	return ""
}

func daemonIsLocal(host string) bool { return strings.HasPrefix(host, "unix://") }
