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
// own image (never pulled) running the enforcer bind-mounted from the
// host, with CAP_NET_ADMIN in its network namespace, which the sandbox
// joins (--network container:). It is created before the sandbox and
// started, attached to a `podman start` the plugin reads, while the
// sandbox is created; the sandbox starts once its rules are in place. It
// carries the run's labels, so gc removes it with the sandbox, and the
// sandbox depends on it, so removing it removes the sandbox too.
type egressGuard struct {
	name    string
	done    chan struct{} // closed once the rules are in place, or the start failed (err)
	err     error
	stop    context.CancelFunc
	monitor *egress.Monitor
}

// createEgress creates the sidecar whose network namespace the sandbox
// named name will join, on networks, with the sandbox's ulimit flags.
func createEgress(ctx context.Context, c cli, name string, policy sdk.EgressPolicy, enforcer, image string, labels map[string]string, networks, ulimits []string) (*egressGuard, error) {
	g := &egressGuard{name: name + "-egress", done: make(chan struct{})}
	args := []string{"create", "--name", g.name, "--pull", "never",
		"--user", "0:0", "--cap-drop", "all", "--cap-add", "NET_ADMIN",
		"--security-opt", "no-new-privileges", "--security-opt", "label=disable",
		"--mount", "type=bind,source=" + enforcer + ",destination=" + egress.MountPath + ",ro=true",
		"--entrypoint", egress.MountPath}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		args = append(args, "--label", k+"="+labels[k])
	}
	for _, n := range networks {
		args = append(args, "--network", n)
	}
	args = append(append(args, ulimits...), image, egress.PolicyArg(policy.Allow, policy.Hosts))
	if _, err := c.run(ctx, nil, args...); err != nil {
		if ctx.Err() != nil {
			_, _ = c.run(context.WithoutCancel(ctx), nil, "rm", "--force", "--ignore", "--time", "0", g.name)
		}
		return nil, fmt.Errorf("create the egress sidecar: %w", err)
	}
	return g, nil
}

// start starts the sidecar in the background; wait waits for its rules.
func (g *egressGuard) start(ctx context.Context, c cli) {
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	g.stop = stop
	cmd := c.command(runCtx, nil, "start", "--attach", g.name)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		g.err = fmt.Errorf("start the egress sidecar: %w", err)
		close(g.done)
		return
	}
	go func() { pw.CloseWithError(cmd.Wait()) }()
	g.monitor = egress.Follow(pr)
	go func() {
		defer close(g.done)
		if err := g.monitor.Ready(ctx); err != nil {
			g.err = fmt.Errorf("egress sidecar: %w", err)
		}
	}()
}

// wait waits until the sidecar's rules are in place, or it failed.
func (g *egressGuard) wait() error {
	<-g.done
	return g.err
}

// remove force-removes the sidecar and the sandbox depending on it, and
// ends its `podman start`.
func (g *egressGuard) remove(ctx context.Context, c cli) error {
	if g.stop != nil {
		defer g.stop()
	}
	if err := removeContainer(ctx, c, g.name); err != nil {
		return fmt.Errorf("remove the egress sidecar and its sandbox: %w", err)
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
