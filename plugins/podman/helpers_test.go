package podman

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/internal/containerkit/containerkittest"
	"github.com/missingstudio/sanddune/sdk"
)

var testImage = containerkittest.Image

// thisHost is what the tests found out about podman on this machine: the
// settings a container needs here (found by preflight's own fixes, e.g.
// runtime = "runc" on a cgroup v1 host), or why podman cannot run.
var thisHost struct {
	once  sync.Once
	attrs map[string]cty.Value
	err   error
}

// requirePodman returns the provider block attributes a container needs
// on this machine, or skips (fails under SANDDUNE_REQUIRE_ENGINES=1) when
// podman or the test image is missing.
func requirePodman(t *testing.T) map[string]cty.Value {
	t.Helper()
	thisHost.once.Do(func() { thisHost.attrs, thisHost.err = detectEngine() })
	containerkittest.RequireEngine(t, "podman", thisHost.err)
	return maps.Clone(thisHost.attrs)
}

func detectEngine() (map[string]cty.Value, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := newCLI(config{})
	if err != nil {
		return nil, err
	}
	if _, err := checkVersion(ctx, c); err != nil {
		return nil, err
	}
	if _, err := c.run(ctx, nil, "image", "exists", testImage()); err != nil {
		return nil, fmt.Errorf("test image %s missing in podman: %w", testImage(), err)
	}
	// No network: rootless networking may be unavailable (see TestRootless),
	// and the runtime settings do not depend on it.
	cfg := config{Config: containerkit.Config{Networks: []string{"none"}}}
	uid, gid, rootless := os.Getuid(), os.Getgid(), os.Geteuid() != 0
	if err := startTest(ctx, c, cfg, rootless, testImage(), uid, gid); err != nil {
		fixed, settings, err2 := fixTest(ctx, cfg, rootless, err, testImage(), uid, gid)
		if err2 != nil {
			return nil, fmt.Errorf("no test container starts: %v (tried %v: %v)", err, settings, err2)
		}
		cfg = fixed
	}
	attrs := map[string]cty.Value{}
	if cfg.Runtime != "" {
		attrs["runtime"] = cty.StringVal(cfg.Runtime)
	}
	if cfg.CgroupManager != "" {
		attrs["cgroup_manager"] = cty.StringVal(cfg.CgroupManager)
	}
	if len(cfg.Ulimits) > 0 {
		ul := map[string]cty.Value{}
		for k, v := range cfg.Ulimits {
			ul[k] = cty.StringVal(v)
		}
		attrs["ulimits"] = cty.MapVal(ul)
	}
	if cfg.UserNS != nil {
		attrs["userns"] = cty.StringVal(*cfg.UserNS)
	}
	return attrs, nil
}

// cfgOf builds a provider block value: this machine's settings, the test
// image, then attrs (the decoder accepts partial objects, as the host fills
// the rest with nulls).
func cfgOf(t *testing.T, attrs map[string]cty.Value) sdk.Config {
	all := requirePodman(t)
	all["image"] = cty.StringVal(testImage())
	maps.Copy(all, attrs)
	return sdk.Config{Value: cty.ObjectVal(all)}
}

// suite runs containerkittest's shared tests on podman.
var suite = containerkittest.Engine{
	Name:       "podman",
	New:        New,
	Config:     cfgOf,
	Processes:  processes,
	Containers: containersOf,
	Parallel:   true,
}

func runID() string { return containerkittest.RunID() }

// create makes a sandbox over a plain directory worktree, closed at cleanup.
func create(t *testing.T, cfg sdk.Config, mod func(*sdk.CreateRequest)) (*sandbox, sdk.CreateRequest) {
	t.Helper()
	sb, req := containerkittest.Create(t, suite, cfg, mod)
	return sb.(*sandbox), req
}

// podman runs the podman CLI for a test.
func podman(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("podman", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("podman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// containersOf lists the containers labelled with one run id.
func containersOf(t *testing.T, runID string) []string {
	return strings.Fields(podman(t, "ps", "-aq", "--filter", "label="+sdk.LabelRun+"="+runID))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// startService starts `podman system service` on a socket in dir with the
// global flags this host needs (as a user would start it), stopped at
// cleanup, and returns its URL.
func startService(t *testing.T, dir string, attrs map[string]cty.Value) string {
	t.Helper()
	url := "unix://" + filepath.Join(dir, "podman.sock")
	var args []string
	for _, flag := range []string{"runtime", "cgroup_manager"} {
		if v, ok := attrs[flag]; ok {
			args = append(args, "--"+strings.ReplaceAll(flag, "_", "-"), v.AsString())
		}
	}
	cmd := exec.Command("podman", append(args, "system", "service", "--time", "0", url)...)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	must(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	// Until it answers or exits (a hung service fails the test at the
	// go test timeout).
	for exec.Command("podman", "--url", url, "version").Run() != nil {
		select {
		case <-exited:
			t.Fatalf("podman system service on %s exited:\n%s", url, log.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return url
}
