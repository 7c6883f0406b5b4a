package docker

import (
	"context"
	"fmt"
	"io"
	"maps"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/missingstudio/sanddune/internal/egress"
	"github.com/missingstudio/sanddune/sdk"
)

// egressGuard is a sandbox's egress sidecar: a container of the sandbox's
// own image (no pull) in the sandbox's network namespace, with
// CAP_NET_ADMIN there, running the enforcer bind-mounted from the host. It
// carries the run's labels, so gc removes it with the sandbox.
type egressGuard struct {
	cli     *client.Client
	id      string
	created chan error // the sidecar's create, done beside the sandbox's start
	stop    context.CancelFunc
	monitor *egress.Monitor
}

// prepareEgress creates the sidecar of the created sandbox s while s
// starts; start starts it.
func (s *sandbox) prepareEgress(ctx context.Context, policy sdk.EgressPolicy, enforcer, image string, labels map[string]string) *egressGuard {
	g := &egressGuard{cli: s.cli, created: make(chan error, 1)}
	s.egress = g
	go func() {
		created, err := s.cli.ContainerCreate(ctx, &container.Config{
			Image:      image,
			User:       "0:0",
			Entrypoint: []string{egress.MountPath},
			Cmd:        []string{egress.PolicyArg(policy.Allow, policy.Hosts)},
			Labels:     maps.Clone(labels),
		}, &container.HostConfig{
			NetworkMode: container.NetworkMode("container:" + s.ID),
			CapDrop:     []string{"ALL"},
			CapAdd:      []string{"NET_ADMIN"},
			SecurityOpt: []string{"no-new-privileges", "label=disable"},
			LogConfig:   container.LogConfig{Type: "json-file"},
			Mounts:      []mount.Mount{{Type: mount.TypeBind, Source: enforcer, Target: egress.MountPath, ReadOnly: true}},
		}, nil, nil, s.Name+"-egress")
		g.id = created.ID
		g.created <- err
	}()
	return g
}

// start starts the sidecar once the sandbox runs (sandboxUp) and waits
// until the enforcer's rules are in place.
func (g *egressGuard) start(ctx context.Context, sandboxUp bool) error {
	if err := <-g.created; err != nil {
		return fmt.Errorf("create the egress sidecar: %w", err)
	}
	if !sandboxUp {
		return nil
	}
	if err := g.cli.ContainerStart(ctx, g.id, container.StartOptions{}); err != nil {
		return fmt.Errorf("start the egress sidecar: %w", err)
	}
	logCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	g.stop = stop
	logs, err := g.cli.ContainerLogs(logCtx, g.id, container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: true})
	if err != nil {
		return fmt.Errorf("follow the egress sidecar: %w", err)
	}
	pr, pw := io.Pipe()
	go func() {
		_, err := stdcopy.StdCopy(pw, pw, logs)
		logs.Close()
		pw.CloseWithError(err)
	}()
	g.monitor = egress.Follow(pr)
	if err := g.monitor.Ready(ctx); err != nil {
		return fmt.Errorf("egress sidecar: %w", err)
	}
	return nil
}

// remove force-removes the sidecar.
func (g *egressGuard) remove(ctx context.Context) error {
	if g.stop != nil {
		defer g.stop()
	}
	if g.id == "" {
		return nil
	}
	if err := removeContainer(ctx, g.cli, g.id); err != nil {
		return fmt.Errorf("remove the egress sidecar: %w", err)
	}
	return nil
}

// WatchEgress implements sdk.EgressWatcher: the sidecar's denials.
func (s *sandbox) WatchEgress(ctx context.Context, report func(sdk.EgressDenial)) error {
	if s.egress == nil || s.egress.monitor == nil {
		<-ctx.Done()
		return nil
	}
	return s.egress.monitor.Watch(ctx, func(d egress.Denial) { report(sdk.EgressDenial(d)) })
}

var _ sdk.EgressWatcher = (*sandbox)(nil)
