package podman

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/internal/containerkit/containerkittest"
	"github.com/missingstudio/sanddune/internal/egress/egresstest"
	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/sdk"
)

func TestConfigureDiagnostics(t *testing.T) {
	t.Parallel()
	p := New()
	attrs := containerkittest.GoodAttrs()
	maps.Copy(attrs, map[string]cty.Value{
		"image":          cty.StringVal("img"),
		"userns":         cty.StringVal("auto"),
		"selinux_label":  cty.StringVal("Z"),
		"runtime":        cty.StringVal("runc"),
		"cgroup_manager": cty.StringVal("cgroupfs"),
		"ulimits":        cty.MapVal(map[string]cty.Value{"nofile": cty.StringVal("1024:2048"), "nproc": cty.StringVal("-1")}),
		"binary":         cty.StringVal("/usr/bin/podman"),
	})
	good := sdk.Config{Value: cty.ObjectVal(attrs)}
	diags, err := p.Configure(context.Background(), good)
	if err != nil || diags.HasErrors() {
		t.Fatalf("good config: %v %v", diags, err)
	}
	c, _ := decodeConfig(good)
	containerkittest.CheckGood(t, c.Config)
	if c.userns(true) != "auto" || c.SELinuxLabel != "Z" || c.Ulimits["nofile"] != "1024:2048" {
		t.Fatalf("decoded %+v", c)
	}
	if c, _ := decodeConfig(sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"selinux_label": cty.False})}); c.SELinuxLabel != "" {
		t.Fatalf("selinux_label = false: %q", c.SELinuxLabel)
	}
	containerkittest.Diagnostics(t, p, func(attrs map[string]cty.Value) sdk.Config { return sdk.Config{Value: cty.ObjectVal(attrs)} },
		containerkittest.DiagnosticCase{Attrs: map[string]cty.Value{"cgroup_manager": cty.StringVal("upstart")}, Want: "cgroup_manager"},
		containerkittest.DiagnosticCase{Attrs: map[string]cty.Value{"ulimits": cty.MapVal(map[string]cty.Value{"files": cty.StringVal("1")})}, Want: "ulimits"},
		containerkittest.DiagnosticCase{Attrs: map[string]cty.Value{"ulimits": cty.MapVal(map[string]cty.Value{"nofile": cty.StringVal("many")})}, Want: "ulimits"},
		containerkittest.DiagnosticCase{Attrs: map[string]cty.Value{"socket": cty.StringVal("/run/podman/podman.sock")}, Want: "socket"},
		containerkittest.DiagnosticCase{Attrs: map[string]cty.Value{"socket": cty.StringVal("unix:///run/podman/podman.sock"), "runtime": cty.StringVal("runc")}, Want: "runtime"},
		containerkittest.DiagnosticCase{Attrs: map[string]cty.Value{"socket": cty.StringVal("unix:///run/podman/podman.sock"), "cgroup_manager": cty.StringVal("cgroupfs")}, Want: "cgroup_manager"},
	)
}

// Values of the env never reach a podman command line (where any user of
// the host can read them), except for the keys podman itself reads.
func TestEnvValuesStayOffTheCommandLine(t *testing.T) {
	t.Parallel()
	args, values := envArgs(map[string]string{"API_KEY": "s3cret", "PATH": "/opt/bin:/usr/bin"})
	if strings.Join(args, " ") != "--env API_KEY --env PATH=/opt/bin:/usr/bin" || values["API_KEY"] != "s3cret" || len(values) != 1 {
		t.Fatalf("args %q values %v", args, values)
	}
}

func TestExec(t *testing.T) { containerkittest.Exec(t, suite) }

// A file the agent writes in the worktree belongs to the host user (rootful
// podman runs the container as --user UID:GID), the home directory to the
// container user, and sudo is root.
func TestWorktreeFilesOwnedByHostUser(t *testing.T) {
	t.Parallel()
	containerkittest.Ownership(t, suite, nil, 1000, 1001)
}

func inspect(t *testing.T, id string) map[string]any {
	t.Helper()
	var in []map[string]any
	if err := json.Unmarshal([]byte(podman(t, "container", "inspect", "--format", "json", id)), &in); err != nil || len(in) != 1 {
		t.Fatalf("inspect: %v", err)
	}
	return in[0]
}

// selinux_label relabels every bind (z: shared; Z: private, but the shared
// git metadata stays shared; false: none). Podman applies the labels only
// where SELinux is enabled and drops them from the inspected mounts
// otherwise, so the test reads the create command podman recorded.
func TestSELinuxLabelRelabelsBinds(t *testing.T) {
	t.Parallel()
	w := kittest.NewWorktree(t, t.TempDir())
	for _, tc := range []struct {
		label     cty.Value
		want, git string // relabel of the worktree, of the git metadata
	}{
		{cty.StringVal("z"), "shared", "shared"},
		{cty.StringVal("Z"), "private", "shared"},
		{cty.False, "", ""},
	} {
		label, want, git := tc.label, tc.want, tc.git
		sb, req := create(t, cfgOf(t, map[string]cty.Value{"selinux_label": label}), func(r *sdk.CreateRequest) {
			r.HostRepoPath, r.WorktreePath, r.GitMounts = w.Repo, w.Path, w.GitMounts
		})
		relabel := map[string]string{} // destination: relabel option
		argv := inspect(t, sb.ID)["Config"].(map[string]any)["CreateCommand"].([]any)
		for i, a := range argv {
			if a != "--mount" || i+1 == len(argv) {
				continue
			}
			opts := map[string]string{}
			for _, kv := range strings.Split(argv[i+1].(string), ",") {
				k, v, _ := strings.Cut(kv, "=")
				opts[k] = v
			}
			relabel[opts["destination"]] = opts["relabel"]
		}
		if got := relabel[containerkit.WorkspaceDir]; got != want {
			t.Errorf("selinux_label %#v: the worktree's relabel %q, want %q", label, got, want)
		}
		for _, g := range req.GitMounts {
			if got := relabel[g.HostPath]; got != git {
				t.Errorf("selinux_label %#v: git metadata %s relabel %q, want %q", label, g.HostPath, got, git)
			}
		}
		if res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: "git status --short && touch ok"}); res.ExitCode != 0 {
			t.Fatalf("selinux_label %#v: the worktree does not work: %q", label, o.Stderr)
		}
		must(t, sb.Close(context.Background()))
	}
}

func TestResourceLimitsReachContainer(t *testing.T) {
	t.Parallel()
	sb := containerkittest.ResourceLimits(t, suite)
	hc := inspect(t, sb.Info().ID)["HostConfig"].(map[string]any)
	if hc["NanoCpus"] != 5e8 || hc["Memory"] != float64(256<<20) || hc["PidsLimit"] != 64.0 {
		t.Fatalf("NanoCpus %v Memory %v PidsLimit %v", hc["NanoCpus"], hc["Memory"], hc["PidsLimit"])
	}
}

func TestNetworkNoneBlocksConnections(t *testing.T) { containerkittest.NetworkNone(t, suite) }

// processes lists the commands running in a container.
func processes(t *testing.T, id string) []string {
	t.Helper()
	lines := strings.Split(podman(t, "top", id, "args"), "\n")
	return lines[1:]
}

func TestCancelKillsProcessTree(t *testing.T) { containerkittest.CancelKillsProcessTree(t, suite) }

func TestCloseRemovesContainer(t *testing.T) { containerkittest.CloseRemovesContainer(t, suite) }

func TestCopyInOut(t *testing.T) { containerkittest.CopyInOut(t, suite) }

// gc removes a container through ListResources/RemoveResource with podman's
// defaults, though the container was created with this host's runtime and
// cgroup manager settings.
func TestRemoveResourceWithDefaults(t *testing.T) {
	t.Parallel()
	sb, req := create(t, cfgOf(t, nil), nil)
	// Leave it, as a killed sanddune would: the sandbox counts as closed.
	must(t, sb.CloseWith(context.Background(), time.Minute, func(context.Context) error { return nil }))
	if err := New().(*Provider).RemoveResource(context.Background(), sdk.Config{}, sb.ID); err != nil {
		t.Fatalf("RemoveResource: %v", err)
	}
	if left := containersOf(t, req.RunID); len(left) != 0 {
		t.Fatalf("containers left: %v", left)
	}
}

func TestGitCommitInWorktree(t *testing.T) { containerkittest.GitCommitInWorktree(t, suite) }

func TestPreflight(t *testing.T) {
	containerkittest.Preflight(t, suite, map[string]containerkittest.PreflightCase{
		"no binary":  {Attrs: map[string]cty.Value{"binary": cty.StringVal("/nonexistent/podman")}, Want: "fix binary"},
		"no runtime": {Attrs: map[string]cty.Value{"runtime": cty.StringVal("sanddune-no-such-runtime")}, Want: `runtime "sanddune-no-such-runtime" not found`},
		"bad ulimit": {Attrs: map[string]cty.Value{"ulimits": cty.MapVal(map[string]cty.Value{"nofile": cty.StringVal("99999999:99999999")})}, Want: "test container cannot start"},
	})
}

// On a host where podman's defaults cannot start a container (here: crun
// on hybrid cgroups, nofile/nproc above the hard limits), preflight finds
// the settings that make it start and Create applies them to a block that
// leaves them unset, saying so in the run's progress: no host numbers in
// the config, nothing written into the repository.
func TestPreflightAdjustsWhatTheBlockLeavesUnset(t *testing.T) {
	t.Parallel()
	needed := requirePodman(t)
	if len(needed) == 0 {
		t.Skip("podman's defaults start containers on this host: nothing to adjust")
	}
	p := New().(*Provider)
	p.checked.cache = t.TempDir()
	repo := t.TempDir()
	bare := sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"image": cty.StringVal(testImage())})}
	if err := p.Preflight(context.Background(), sdk.PreflightRequest{Config: bare, HostRepoPath: repo, HostUID: os.Getuid(), HostGID: os.Getgid()}); err != nil {
		t.Fatalf("preflight with podman's defaults: %v", err)
	}
	var progress []string
	sb, err := p.Create(context.Background(), sdk.CreateRequest{
		Config: bare, RunID: runID(), RunName: t.Name(), HostRepoPath: repo, WorktreePath: repo,
		HostUID: os.Getuid(), HostGID: os.Getgid(),
		Labels:   map[string]string{sdk.LabelRun: "test", sdk.LabelSandbox: "sandbox.podman.test"},
		Progress: func(pr sdk.Progress) { progress = append(progress, pr.Message) },
	})
	if err != nil {
		t.Fatalf("Create with podman's defaults after preflight: %v", err)
	}
	defer sb.Close(context.Background())
	res, err := sb.Exec(context.Background(), sdk.ExecRequest{Argv: []string{"true"}}, func(sdk.OutputLine) {})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("exec: %v %+v", err, res)
	}
	said := strings.Join(progress, "\n")
	for name := range needed {
		if !strings.Contains(said, name+" = ") {
			t.Errorf("the progress does not say %s was adjusted:\n%s", name, said)
		}
	}
	if entries, _ := os.ReadDir(repo); len(entries) != 0 {
		t.Errorf("the repository holds %v after preflight and create", entries)
	}
}

// build-image builds .sanddune/Containerfile with the host UID/GID; its
// RUN steps need this host's runtime, and without it the error says so.
func TestBuildImageCommand(t *testing.T) {
	host := requirePodman(t)
	var args []string
	if rt, ok := host["runtime"]; ok {
		repo, image := containerkittest.BuildRepo(t, "Containerfile"), "sanddune:no-runtime-"+containerkit.RandomHex(3)
		p := New().(*Provider)
		var lines []string
		code, err := p.RunCommand(context.Background(), sdk.RunCommandRequest{Name: "build-image", Args: []string{"--image-name", image},
			Cwd: repo, HostRepoPath: repo, HostUID: 4321, HostGID: 4321}, func(l sdk.OutputLine) { lines = append(lines, string(l.Text)) })
		if code == 0 {
			_, _ = p.RunCommand(context.Background(), sdk.RunCommandRequest{Name: "remove-image", Args: []string{"--image-name", image}}, func(sdk.OutputLine) {})
		}
		if code != 1 || err == nil || !strings.Contains(err.Error(), "pass the same --runtime") {
			t.Fatalf("build-image without this host's runtime: %d %v\n%s", code, err, strings.Join(lines, "\n"))
		}
		args = []string{"--runtime", rt.AsString()}
	}
	containerkittest.BuildImage(t, suite, containerkittest.BuildImageCase{File: "Containerfile", Progress: "STEP", Args: args})
}

// The agent home is not prepared where the image has it; made where not.
// Serial (containerkittest.Home).
func TestHome(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("podman's probe reads the container's owners from its mounted root, which only rootful podman can mount: rootless, the home is always prepared (TestRootless)")
	}
	var args []string
	if rt, ok := requirePodman(t)["runtime"]; ok {
		args = []string{"--runtime", rt.AsString()}
	}
	containerkittest.Home(t, suite, containerkittest.BuildImageCase{File: "Containerfile", Args: args})
}

// Where podman is not installed, preflight and Create say how to install
// it, and gc finds nothing to remove rather than failing. Serial: it
// empties PATH.
func TestWithoutPodman(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	p := New().(*Provider)
	ctx := context.Background()
	rs, err := p.ListResources(ctx, sdk.Config{})
	if err != nil || len(rs) != 0 {
		t.Fatalf("ListResources without podman: %v %v", rs, err)
	}
	cfg := sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"image": cty.StringVal("img")})}
	err = p.Preflight(ctx, sdk.PreflightRequest{Config: cfg, HostRepoPath: t.TempDir(), HostUID: os.Getuid(), HostGID: os.Getgid()})
	if err == nil || !strings.Contains(err.Error(), "apt-get install podman") {
		t.Fatalf("preflight without podman: %v", err)
	}
	wt := t.TempDir()
	if _, err := p.Create(ctx, sdk.CreateRequest{Config: cfg, RunID: runID(), RunName: "x", HostRepoPath: wt, WorktreePath: wt}); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Fatalf("Create without podman: %v", err)
	}
}

// Podman containers are a security boundary like docker's, so agents get
// their permission-bypass flag in them.
func TestInfo(t *testing.T) {
	t.Parallel()
	info, err := New().Info(context.Background())
	if err != nil || info.Sandbox == nil {
		t.Fatal(info, err)
	}
	if c := info.Sandbox; c.Contract != sdk.ContractBindMount || !c.Confines || !c.NetworkNone || !c.Sudo || c.TTY {
		t.Fatalf("capabilities %+v", c)
	}
}

// A preflight that passed is remembered in the user's cache directory, not
// in the repository, so a later sanddune process starts no second test
// container; a
// change to what the test depends on (here the podman binary) tests again,
// and so does the preflight after a container that did not start. The
// podman binary is a wrapper around the real one that logs its calls and
// refuses `create` while a flag file exists.
func TestPreflightRemembersAPassedTestContainer(t *testing.T) {
	t.Parallel()
	requirePodman(t)
	real, err := exec.LookPath("podman")
	must(t, err)
	dir, repo, cache := t.TempDir(), t.TempDir(), t.TempDir()
	calls, refuse, wrapper := filepath.Join(dir, "calls"), filepath.Join(dir, "refuse-create"), filepath.Join(dir, "podman")
	script := fmt.Sprintf(`#!/bin/sh
echo "$*" >>%q
case " $* " in *" create "*) if [ -e %q ]; then echo "Error: create refused by the test" >&2; exit 125; fi;; esac
exec %q "$@"
`, calls, refuse, real)
	must(t, os.WriteFile(wrapper, []byte(script), 0o755))
	cfg := cfgOf(t, map[string]cty.Value{"binary": cty.StringVal(wrapper)})
	provider := func() *Provider { // a new provider: another sanddune process
		p := New().(*Provider)
		p.checked.cache = cache
		return p
	}
	preflight := func() {
		t.Helper()
		must(t, provider().Preflight(context.Background(), sdk.PreflightRequest{Config: cfg, HostRepoPath: repo, HostUID: os.Getuid(), HostGID: os.Getgid()}))
	}
	tests := func() int {
		b, _ := os.ReadFile(calls)
		return strings.Count(string(b), "--name sanddune-preflight-")
	}

	preflight()
	if n := tests(); n != 1 {
		t.Fatalf("%d test containers, want 1", n)
	}
	if entries, _ := os.ReadDir(repo); len(entries) > 0 {
		t.Fatalf("preflight wrote %s in the repository", entries[0].Name())
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 1 {
		t.Fatalf("the cache holds %d entries, want the one shape that passed", len(entries))
	}
	preflight()
	if n := tests(); n != 1 {
		t.Fatalf("%d test containers after a second preflight of the same shape, want 1", n)
	}

	must(t, os.WriteFile(refuse, nil, 0o644))
	_, err = provider().Create(context.Background(), sdk.CreateRequest{Config: cfg, RunID: runID(), RunName: t.Name(),
		HostRepoPath: repo, WorktreePath: repo, HostUID: os.Getuid(), HostGID: os.Getgid()})
	if err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Fatalf("Create with create refused: %v", err)
	}
	must(t, os.Remove(refuse))
	preflight()
	if n := tests(); n != 2 {
		t.Fatalf("%d test containers, want 2: a container that did not start makes preflight test again", n)
	}

	later := time.Now().Add(time.Minute)
	must(t, os.Chtimes(wrapper, later, later))
	preflight()
	if n := tests(); n != 3 {
		t.Fatalf("%d test containers, want 3: another podman binary is tested again", n)
	}
}

func TestEgressPolicyEnforced(t *testing.T) { containerkittest.Egress(t, suite) }

func TestMain(m *testing.M) { os.Exit(egresstest.WithEnforcer(m)) }

// TestNoHostMounts: the host's directories are mounted where the
// container's user is the host's (rootful without a user namespace,
// keep-id) and podman runs here; the rootless case is run for real in
// TestRootless.
func TestNoHostMounts(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	for _, c := range []struct {
		cfg      config
		rootless bool
		want     string
	}{
		{config{}, false, ""},
		{config{}, true, ""}, // keep-id
		{config{UserNS: str("")}, true, "maps user ids"},
		{config{UserNS: str("auto")}, false, "maps user ids"},
		{config{UserNS: str("keep-id")}, false, ""},
		{config{Socket: "unix:///run/podman/podman.sock"}, false, ""},
		{config{Socket: "ssh://core@10.0.0.2/run/podman/podman.sock"}, false, "another machine"},
	} {
		got := noHostMounts(c.cfg, c.rootless)
		if (got == "") != (c.want == "") || !strings.Contains(got, c.want) {
			t.Errorf("noHostMounts(%+v, rootless %v) = %q, want %q", c.cfg, c.rootless, got, c.want)
		}
	}
}
