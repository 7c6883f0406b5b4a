package docker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"
	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/internal/containerkit/containerkittest"
	"github.com/missingstudio/sanddune/internal/egress/egresstest"
	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/sdk"
)

var testImage = containerkittest.Image

// requireDocker returns a client, or skips (fails under
// SANDDUNE_REQUIRE_ENGINES=1) when the daemon or the test image is missing.
func requireDocker(t *testing.T) *client.Client {
	t.Helper()
	cli, err := testClient()
	containerkittest.RequireEngine(t, "docker", err)
	return cli
}

func testClient() (*client.Client, error) {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		return nil, fmt.Errorf("daemon not reachable: %w", err)
	}
	if _, err := cli.ImageInspect(ctx, testImage()); err != nil {
		return nil, fmt.Errorf("test image %s missing: %w", testImage(), err)
	}
	return cli, nil
}

// cfgOf builds a provider block value from attributes (the decoder accepts
// partial objects, as the host fills the rest with nulls).
func cfgOf(attrs map[string]cty.Value) sdk.Config {
	if attrs == nil {
		attrs = map[string]cty.Value{}
	}
	if _, ok := attrs["image"]; !ok {
		attrs["image"] = cty.StringVal(testImage())
	}
	return sdk.Config{Value: cty.ObjectVal(attrs)}
}

// suite runs containerkittest's shared tests on docker.
var suite = containerkittest.Engine{
	Name: "docker",
	New:  New,
	Config: func(t *testing.T, attrs map[string]cty.Value) sdk.Config {
		requireDocker(t)
		return cfgOf(attrs)
	},
	Processes: func(t *testing.T, id string) []string { return topCommands(t, requireDocker(t), id) },
	Containers: func(t *testing.T, runID string) []string {
		cs, err := requireDocker(t).ContainerList(context.Background(), container.ListOptions{All: true,
			Filters: filters.NewArgs(filters.Arg("label", sdk.LabelRun+"="+runID))})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range cs {
			ids = append(ids, c.ID)
		}
		return ids
	},
}

// create makes a sandbox over a plain directory worktree, closed at cleanup.
func create(t *testing.T, cfg sdk.Config, mod func(*sdk.CreateRequest)) (*sandbox, sdk.CreateRequest) {
	t.Helper()
	sb, req := containerkittest.Create(t, suite, cfg, mod)
	return sb.(*sandbox), req
}

func TestConfigureDiagnostics(t *testing.T) {
	t.Parallel()
	p := New().(*Provider)
	attrs := containerkittest.GoodAttrs()
	attrs["groups"] = cty.ListVal([]cty.Value{cty.StringVal("docker"), cty.StringVal("999")})
	good := cfgOf(attrs)
	diags, err := p.Configure(context.Background(), good)
	if err != nil || diags.HasErrors() {
		t.Fatalf("good config: %v %v", diags, err)
	}
	c, _ := decodeConfig(good)
	containerkittest.CheckGood(t, c.Config)
	if len(c.Groups) != 2 {
		t.Fatalf("decoded %+v", c)
	}
	containerkittest.Diagnostics(t, p, cfgOf,
		containerkittest.DiagnosticCase{Attrs: map[string]cty.Value{"container_uid": cty.NumberIntVal(-1)}, Want: "container_uid"},
		containerkittest.DiagnosticCase{Attrs: map[string]cty.Value{"groups": cty.ListVal([]cty.Value{cty.StringVal(" ")})}, Want: "groups.0"},
	)
}

func TestExec(t *testing.T) { containerkittest.Exec(t, suite) }

// A file the agent writes in the worktree belongs to the user the
// container runs as (the host user, or container_uid), and the home
// directory to the container user; sudo is root.
func TestWorktreeFilesOwnedByHostUser(t *testing.T) {
	t.Parallel()
	t.Run("host-uid", func(t *testing.T) { containerkittest.Ownership(t, suite, nil, 1000, 1001) })
	t.Run("container-uid", func(t *testing.T) {
		containerkittest.Ownership(t, suite, map[string]cty.Value{"container_uid": cty.NumberIntVal(1234), "container_gid": cty.NumberIntVal(1235)}, 1234, 1235)
	})
}

// selinux_label relabels every bind (z: shared; Z: private, but the shared
// git metadata stays shared), through docker's Binds strings.
func TestSELinuxLabelRelabelsBinds(t *testing.T) {
	t.Parallel()
	cli := requireDocker(t)
	w := kittest.NewWorktree(t, t.TempDir())
	for _, label := range []string{"z", "Z"} {
		sb, req := create(t, cfgOf(map[string]cty.Value{"selinux_label": cty.StringVal(label)}), func(r *sdk.CreateRequest) {
			r.HostRepoPath, r.WorktreePath, r.GitMounts = w.Repo, w.Path, w.GitMounts
		})
		in, err := cli.ContainerInspect(context.Background(), sb.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{req.WorktreePath + ":" + containerkit.WorkspaceDir + ":" + label}
		for _, g := range req.GitMounts {
			opts := "z"
			if g.ReadOnly {
				opts = "ro,z"
			}
			want = append(want, g.HostPath+":"+g.HostPath+":"+opts)
		}
		if strings.Join(in.HostConfig.Binds, " ") != strings.Join(want, " ") || len(in.HostConfig.Mounts) != 0 {
			t.Fatalf("selinux_label %q: binds %q mounts %v, want %q", label, in.HostConfig.Binds, in.HostConfig.Mounts, want)
		}
		if res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: "git status --short && touch ok"}); res.ExitCode != 0 {
			t.Fatalf("selinux_label %q: the worktree does not work: %q", label, o.Stderr)
		}
		must(t, sb.Close(context.Background()))
	}
}

func TestResourceLimitsReachContainer(t *testing.T) {
	t.Parallel()
	cli := requireDocker(t)
	sb := containerkittest.ResourceLimits(t, suite)
	in, err := cli.ContainerInspect(context.Background(), sb.Info().ID)
	if err != nil {
		t.Fatal(err)
	}
	hc := in.HostConfig
	if hc.NanoCPUs != 500_000_000 || hc.Memory != 256<<20 || hc.PidsLimit == nil || *hc.PidsLimit != 64 {
		t.Fatalf("NanoCPUs %d Memory %d PidsLimit %v", hc.NanoCPUs, hc.Memory, hc.PidsLimit)
	}
	if in.Config.User != fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()) {
		t.Fatalf("user %q", in.Config.User)
	}
}

// network = "none" blocks a connection to a listener on the docker bridge
// gateway, which the default network reaches.
func TestNetworkNoneBlocksConnections(t *testing.T) { containerkittest.NetworkNone(t, suite) }

func topCommands(t *testing.T, cli *client.Client, id string) []string {
	t.Helper()
	top, err := cli.ContainerTop(context.Background(), id, nil)
	if err != nil {
		t.Fatal(err)
	}
	col := len(top.Titles) - 1
	var cmds []string
	for _, p := range top.Processes {
		cmds = append(cmds, p[col])
	}
	return cmds
}

func TestCancelKillsProcessTree(t *testing.T) { containerkittest.CancelKillsProcessTree(t, suite) }

func TestCloseRemovesContainer(t *testing.T) { containerkittest.CloseRemovesContainer(t, suite) }

func TestCopyInOut(t *testing.T) { containerkittest.CopyInOut(t, suite) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestGitCommitInWorktree(t *testing.T) { containerkittest.GitCommitInWorktree(t, suite) }

func TestPreflight(t *testing.T) {
	containerkittest.Preflight(t, suite, map[string]containerkittest.PreflightCase{
		"too many cpus": {Attrs: map[string]cty.Value{"cpus": cty.NumberIntVal(4096)}, Want: "lower cpus"},
	})
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	req := sdk.PreflightRequest{Config: cfgOf(nil), HostRepoPath: t.TempDir(), HostUID: 1000, HostGID: 1000}
	if err := New().Preflight(context.Background(), req); err == nil || !strings.Contains(err.Error(), "start Docker") {
		t.Errorf("unreachable daemon: %v", err)
	}
}

// build-image builds .sanddune/Dockerfile with the host UID/GID, under
// the repo's default image name; a UID mismatch suggests container_uid.
func TestBuildImageCommand(t *testing.T) {
	t.Parallel()
	containerkittest.BuildImage(t, suite, containerkittest.BuildImageCase{
		File: "Dockerfile", Progress: "Step", Mismatch: "container_uid = 4321", DefaultName: true,
	})
}

// The agent home is not prepared where the image has it; made where not.
// Serial (containerkittest.Home).
func TestHome(t *testing.T) {
	containerkittest.Home(t, suite, containerkittest.BuildImageCase{File: "Dockerfile"})
}

// A container removed or stopped from outside mid-exec is reported as the
// sandbox gone, not as the command's exit code 137.
func TestExecInContainerRemovedFromOutside(t *testing.T) {
	t.Parallel()
	cli := requireDocker(t)
	for _, how := range []string{"remove", "kill"} {
		t.Run(how, func(t *testing.T) {
			sb, _ := create(t, cfgOf(nil), nil)
			ctx := context.Background()
			var once sync.Once
			_, err := sb.Exec(ctx, sdk.ExecRequest{Shell: `echo ready; sleep 1000`}, func(l sdk.OutputLine) {
				if string(l.Text) != "ready" {
					return
				}
				once.Do(func() {
					go func() {
						var err error
						if how == "remove" {
							err = cli.ContainerRemove(ctx, sb.ID, container.RemoveOptions{Force: true})
						} else {
							err = cli.ContainerKill(ctx, sb.ID, "KILL")
						}
						if err != nil {
							t.Error(err)
						}
					}()
				})
			})
			if !errors.Is(err, sdk.ErrSandboxGone) || !strings.Contains(err.Error(), sb.Name) {
				t.Fatalf("exec in a container that was %s: %v", how, err)
			}
			if _, err := sb.Exec(ctx, sdk.ExecRequest{Argv: []string{"true"}}, func(sdk.OutputLine) {}); !errors.Is(err, sdk.ErrSandboxGone) {
				t.Fatalf("next exec: %v", err)
			}
			if err := sb.Close(ctx); err != nil {
				t.Fatalf("Close of a gone container: %v", err)
			}
		})
	}
}

// TestConcurrentRemovalsAllSucceed: two gc's (or a gc and a closing run)
// removing one container at once both succeed: docker's "removal already
// in progress" is waited for, and a container already gone is no error.
func TestConcurrentRemovalsAllSucceed(t *testing.T) {
	t.Parallel()
	cli := requireDocker(t)
	sb, _ := create(t, cfgOf(nil), nil)
	p := New().(*Provider)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = p.RemoveResource(context.Background(), sdk.Config{}, sb.ID) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("removal %d: %v", i, err)
		}
	}
	if _, err := cli.ContainerInspect(context.Background(), sb.ID); err == nil {
		t.Error("the container is still there")
	}
}

// TestAttachToAContainerRemovedMeanwhile: a container removed between an
// exec's create and its attach (as during a run's setup) is reported as
// the sandbox gone, not as the daemon's "unable to upgrade to tcp".
func TestAttachToAContainerRemovedMeanwhile(t *testing.T) {
	cli := requireDocker(t)
	var remove atomic.Value // the container to remove at the next exec start
	t.Setenv("DOCKER_HOST", containerkittest.BeforeRequests(t, func(r *http.Request) {
		if id, _ := remove.Load().(string); id != "" && strings.Contains(r.URL.Path, "/exec/") && strings.HasSuffix(r.URL.Path, "/start") {
			if err := cli.ContainerRemove(context.Background(), id, container.RemoveOptions{Force: true}); err != nil {
				t.Error(err)
			}
		}
	}))
	sb, _ := create(t, cfgOf(nil), nil)
	remove.Store(sb.ID)
	_, err := sb.Exec(context.Background(), sdk.ExecRequest{Argv: []string{"true"}}, func(sdk.OutputLine) {})
	if !errors.Is(err, sdk.ErrSandboxGone) || !strings.Contains(err.Error(), "removed from outside sanddune") {
		t.Fatalf("exec in a container removed before its attach: %v", err)
	}
}

func TestEgressPolicyEnforced(t *testing.T) { containerkittest.Egress(t, suite) }

func TestMain(m *testing.M) { os.Exit(egresstest.WithEnforcer(m)) }

// TestNoHostMounts: a daemon that maps user ids (rootless, userns-remap:
// its info's security options say so), or that is not on this machine,
// gets no host mount; this daemon gets it.
func TestNoHostMounts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ opts, host, want string }{
		{"name=seccomp,profile=builtin name=cgroupns", "unix:///var/run/docker.sock", ""},
		{"name=seccomp,profile=builtin name=rootless", "unix:///run/user/1000/docker.sock", "maps user ids"},
		{"name=apparmor name=userns", "unix:///var/run/docker.sock", "maps user ids"},
		{"", "tcp://10.0.0.2:2375", "another machine"},
	} {
		got := noHostMounts(system.Info{SecurityOptions: strings.Fields(c.opts)}, c.host)
		if (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
			t.Errorf("noHostMounts(%s, %s) = %q, want %q", c.opts, c.host, got, c.want)
		}
	}
	for _, why := range []string{"", "the Docker daemon maps user ids"} {
		dir := t.TempDir()
		sb, _ := containerkittest.Create(t, containerkittest.Engine{Name: suite.Name, New: func() sdk.SandboxProvider {
			p := New().(*Provider)
			p.noMounts.Store(why)
			return p
		}}, suite.Config(t, nil), func(r *sdk.CreateRequest) {
			r.Mounts = []sdk.Mount{{HostPath: dir, SandboxPath: "~/.m"}}
		})
		if mounted := len(sb.Info().Mounts) == 1; mounted != (why == "") {
			t.Errorf("unable %q: mounts %+v", why, sb.Info().Mounts)
		}
	}
	// Without a preflight the daemon is not known to see the directory.
	dir := t.TempDir()
	sb, _ := containerkittest.Create(t, containerkittest.Engine{Name: suite.Name, New: New}, suite.Config(t, nil), func(r *sdk.CreateRequest) {
		r.Mounts = []sdk.Mount{{HostPath: dir, SandboxPath: "~/.m"}}
	})
	if len(sb.Info().Mounts) != 0 {
		t.Errorf("mounted without a preflight: %+v", sb.Info().Mounts)
	}
}
