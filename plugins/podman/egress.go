package podman

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/missingstudio/sanddune/internal/egress"
	"github.com/missingstudio/sanddune/sdk"
)

// egressGuard is a sandbox's egress sidecar: a container of the sandbox's
// own image (never pulled) in the sandbox's network namespace, with
// CAP_NET_ADMIN there, running the enforcer bind-mounted from the host,
// attached to a `podman run` the plugin reads. It carries the run's
// labels, so gc removes it with the sandbox.
type egressGuard struct {
	name    string
	stop    context.CancelFunc
	monitor *egress.Monitor
}

// startEgress starts the running sandbox's sidecar (with the sandbox's
// extra podman flags) and waits until the enforcer's rules are in place.
func (s *sandbox) startEgress(ctx context.Context, policy sdk.EgressPolicy, enforcer, image string, labels map[string]string, extra []string) error {
	g := &egressGuard{name: s.Name + "-egress"}
	s.egress = g
	args := []string{"run", "--name", g.name, "--pull", "never", "--network", "container:" + s.ID,
		"--user", "0:0", "--cap-drop", "all", "--cap-add", "NET_ADMIN",
		"--security-opt", "no-new-privileges", "--security-opt", "label=disable",
		"--mount", "type=bind,source=" + enforcer + ",destination=" + egress.MountPath + ",ro=true",
		"--entrypoint", egress.MountPath}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		args = append(args, "--label", k+"="+labels[k])
	}
	args = append(append(args, extra...), image, egress.PolicyArg(policy.Allow, policy.Hosts))
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	g.stop = stop
	cmd := s.cli.command(runCtx, nil, args...)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the egress sidecar: %w", err)
	}
	go func() { pw.CloseWithError(cmd.Wait()) }()
	g.monitor = egress.Follow(pr)
	if err := g.monitor.Ready(ctx); err != nil {
		return fmt.Errorf("egress sidecar: %w", err)
	}
	return nil
}

// remove force-removes the sidecar, which ends its `podman run`.
func (g *egressGuard) remove(ctx context.Context, c cli) error {
	defer g.stop()
	if err := removeContainer(ctx, c, g.name); err != nil {
		return fmt.Errorf("remove the egress sidecar: %w", err)
	}
	return nil
}

// WatchEgress implements sdk.EgressWatcher: the sidecar's denials.
func (s *sandbox) WatchEgress(ctx context.Context, report func(sdk.EgressDenial)) error {
	if s.egress == nil {
		<-ctx.Done()
		return nil
	}
	return s.egress.monitor.Watch(ctx, func(d egress.Denial) { report(sdk.EgressDenial(d)) })
}

var _ sdk.EgressWatcher = (*sandbox)(nil)
