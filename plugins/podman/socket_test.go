package podman

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

// With socket, the podman CLI talks to a podman service (as podman --url):
// the conformance kit passes through it, env values reach the container
// without a command line, preflight checks the service, the containers
// are the ones local podman sees, and gc lists them through the block's
// socket.
func TestSocket(t *testing.T) {
	t.Parallel()
	host := requirePodman(t)
	url := startService(t, t.TempDir(), host)
	// The service has the runtime settings; the block keeps the rest.
	attrs := map[string]cty.Value{"socket": cty.StringVal(url), "runtime": cty.NullVal(cty.String), "cgroup_manager": cty.NullVal(cty.String)}
	cfg := cfgOf(t, attrs)
	// The service's own checks and the kit through it, side by side.
	t.Run("Service", func(t *testing.T) {
		t.Parallel()
		p := New()
		req := sdk.PreflightRequest{Config: cfg, HostRepoPath: t.TempDir(), HostUID: os.Getuid(), HostGID: os.Getgid()}
		if err := p.Preflight(context.Background(), req); err != nil {
			t.Fatalf("preflight through the service: %v", err)
		}
		sb, creq := create(t, cfg, func(r *sdk.CreateRequest) { r.Env["SECRET"] = "s3cret" })
		if res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: `echo "$SECRET"; id -u`}); res.ExitCode != 0 || strings.Join(o.Stdout, " ") != "s3cret "+strconv.Itoa(os.Getuid()) {
			t.Fatalf("exec through the service: %+v %q %q", res, o.Stdout, o.Stderr)
		}
		if got := containersOf(t, creq.RunID); len(got) != 1 {
			t.Fatalf("local podman lists %v for the run", got)
		}
		rs, err := p.(sdk.ResourceLister).ListResources(context.Background(), cfg)
		if err != nil || !slices.ContainsFunc(rs, func(r sdk.Resource) bool { return r.Labels[sdk.LabelRun] == creq.RunID }) {
			t.Fatalf("ListResources through the socket: %+v, %v; want the run's container", rs, err)
		}
		must(t, sb.Close(context.Background()))
		if got := containersOf(t, creq.RunID); len(got) != 0 {
			t.Fatalf("containers left: %v", got)
		}

		down := cfgOf(t, map[string]cty.Value{"socket": cty.StringVal("unix://" + t.TempDir() + "/none.sock"), "runtime": cty.NullVal(cty.String), "cgroup_manager": cty.NullVal(cty.String)})
		if err := p.Preflight(context.Background(), sdk.PreflightRequest{Config: down, HostRepoPath: t.TempDir(), HostUID: os.Getuid(), HostGID: os.Getgid()}); err == nil || !strings.Contains(err.Error(), "podman system service") {
			t.Errorf("preflight with no service on the socket: %v", err)
		}
		if rs, err := p.(sdk.ResourceLister).ListResources(context.Background(), down); err == nil {
			t.Errorf("ListResources with no service on the block's socket: %+v, no error", rs)
		}
	})
	t.Run("Conformance", func(t *testing.T) {
		t.Parallel()
		sandboxtest.Run(t, New(), sandboxtest.Options{Config: cfg.Value})
	})
}
