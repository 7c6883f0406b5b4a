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
// own image (no pull) running the enforcer bind-mounted from the host,
// with CAP_NET_ADMIN in its network namespace, which the sandbox joins
// (network mode container:). It is created and started while the sandbox
// is created, and the sandbox starts once its rules are in place. It
// carries the run's labels, so gc removes it with the sandbox.
type egressGuard struct {
	cli     *client.Client
	name    string
	id      string        // set before done is closed
	done    chan struct{} // closed once the sidecar is up, or failed (err)
	err     error
	stop    context.CancelFunc
	monitor *egress.Monitor
}

// startEgress creates and starts, in the background, the sidecar whose
// network namespace the sandbox named name will join, on networks (the
// first its network mode, the others connected).
func startEgress(ctx context.Context, cli *client.Client, name string, policy sdk.EgressPolicy, enforcer, image string, labels map[string]string, networks []string) *egressGuard {
	g := &egressGuard{cli: cli, name: name + "-egress", done: make(chan struct{})}
	hostCfg := &container.HostConfig{
		CapDrop:     []string{"ALL"},
		CapAdd:      []string{"NET_ADMIN"},
		SecurityOpt: []string{"no-new-privileges", "label=disable"},
		LogConfig:   container.LogConfig{Type: "json-file"},
		Mounts:      []mount.Mount{{Type: mount.TypeBind, Source: enforcer, Target: egress.MountPath, ReadOnly: true}},
	}
	if len(networks) > 0 {
		hostCfg.NetworkMode = container.NetworkMode(networks[0])
	}
	go func() {
		defer close(g.done)
		// As the sandbox's: the create is not cancelled with ctx.
		createCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		created, err := cli.ContainerCreate(createCtx, &container.Config{
			Image:      image,
			User:       "0:0",
			Entrypoint: []string{egress.MountPath},
			Cmd:        []string{egress.PolicyArg(policy.Allow, policy.Hosts)},
			Labels:     maps.Clone(labels),
		}, hostCfg, nil, nil, g.name)
		if err != nil {
			g.err = fmt.Errorf("create the egress sidecar: %w", err)
			return
		}
		g.id = created.ID
		g.err = g.start(ctx, networks)
	}()
	return g
}

// wait waits until the sidecar is up (its rules in place), or failed.
func (g *egressGuard) wait() error {
	<-g.done
	return g.err
}

// start connects the created sidecar to the extra networks, starts it and
// waits until the enforcer's rules are in place.
func (g *egressGuard) start(ctx context.Context, networks []string) error {
	if err := connectNetworks(ctx, g.cli, g.id, networks); err != nil {
		return err
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

// remove force-removes the sidecar, once its start ended.
func (g *egressGuard) remove(ctx context.Context) error {
	<-g.done
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
