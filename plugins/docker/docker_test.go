package docker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/containerkit"
	"github.com/missingstudio/sanddune/sdk/sandboxkit/kittest"
	"github.com/zclconf/go-cty/cty"
)

// testImage is built by scripts/test-image.sh (debootstrap minbase + git).
func testImage() string {
	if s := os.Getenv("SANDDUNE_TEST_IMAGE"); s != "" {
		return s
	}
	return "sanddune-test-base:bookworm"
}

// requireDocker returns a client, or skips (fails under
// SANDDUNE_REQUIRE_ENGINES=1) when the daemon or the test image is missing.
func requireDocker(t *testing.T) *client.Client {
	t.Helper()
	cli, err := testClient()
	if err != nil {
		err = fmt.Errorf("%w (run scripts/ci-setup.sh as root)", err)
	}
	kittest.RequireEngine(t, "docker", err)
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

func runID(t *testing.T) string { return "test-" + containerkit.RandomHex(6) }

// create makes a sandbox over a plain directory worktree, closed at cleanup.
func create(t *testing.T, cfg sdk.Config, mod func(*sdk.CreateRequest)) (*sandbox, sdk.CreateRequest) {
	t.Helper()
	wt := t.TempDir()
	req := sdk.CreateRequest{
		Config:       cfg,
		RunID:        runID(t),
		RunName:      t.Name(),
		HostRepoPath: wt,
		WorktreePath: wt,
		Env:          map[string]string{"SANDDUNE_TEST": "1"},
		HostUID:      os.Getuid(),
		HostGID:      os.Getgid(),
	}
	if mod != nil {
		mod(&req)
	}
	req.Labels = map[string]string{sdk.LabelRun: req.RunID, sdk.LabelSandbox: "sandbox.docker.test", sdk.LabelVersion: "test"}
	sb, err := New().Create(context.Background(), req)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sb.(*sandbox), req
}

func TestConfigureDiagnostics(t *testing.T) {
	p := New()
	good := cfgOf(map[string]cty.Value{
		"env":        cty.MapVal(map[string]cty.Value{"A": cty.StringVal("1")}),
		"network":    cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
		"cpus":       cty.NumberFloatVal(1.5),
		"memory":     cty.StringVal("512m"),
		"pids_limit": cty.NumberIntVal(100),
		"devices":    cty.ListVal([]cty.Value{cty.StringVal("/dev/kvm"), cty.StringVal("/dev/a:/dev/b:rw")}),
		"groups":     cty.ListVal([]cty.Value{cty.StringVal("docker"), cty.StringVal("999")}),
		"mount": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"host_path": cty.StringVal("~/.npm"), "sandbox_path": cty.StringVal("~/.npm"), "readonly": cty.True,
		})}),
	})
	diags, err := p.Configure(context.Background(), good)
	if err != nil || diags.HasErrors() {
		t.Fatalf("good config: %v %v", diags, err)
	}
	c, _ := decodeConfig(good)
	if c.Memory != 512<<20 || c.CPUs != 1.5 || len(c.Networks) != 2 || c.Mounts[0].SandboxPath != "/home/agent/.npm" ||
		c.Devices[1] != (containerkit.Device{HostPath: "/dev/a", ContainerPath: "/dev/b", Permissions: "rw"}) {
		t.Fatalf("decoded %+v", c)
	}

	for _, tc := range []struct {
		attrs map[string]cty.Value
		want  string
	}{
		{map[string]cty.Value{"memory": cty.StringVal("lots")}, "memory"},
		{map[string]cty.Value{"memory": cty.StringVal("1k")}, "memory"},
		{map[string]cty.Value{"cpus": cty.NumberIntVal(0)}, "cpus"},
		{map[string]cty.Value{"pids_limit": cty.NumberFloatVal(1.5)}, "pids_limit"},
		{map[string]cty.Value{"network": cty.TupleVal([]cty.Value{cty.StringVal("none"), cty.StringVal("x")})}, "network"},
		{map[string]cty.Value{"network": cty.NumberIntVal(3)}, "network"},
		{map[string]cty.Value{"devices": cty.ListVal([]cty.Value{cty.StringVal("kvm")})}, "devices.0"},
		{map[string]cty.Value{"container_uid": cty.NumberIntVal(-1)}, "container_uid"},
		{map[string]cty.Value{"mount": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"host_path": cty.StringVal("x"), "sandbox_path": cty.StringVal("../up"), "readonly": cty.False,
		})})}, "mount.0.sandbox_path"},
	} {
		diags, _ := p.Configure(context.Background(), cfgOf(tc.attrs))
		if !diags.HasErrors() || diags[0].Attribute != tc.want {
			t.Errorf("%v: want an error on %s, got %#v", tc.attrs, tc.want, diags)
		}
	}
}

func TestExec(t *testing.T) {
	requireDocker(t)
	// The block's env reaches commands the way the host passes it: Describe
	// gives it, the host layers it into CreateRequest.Env.
	cfg := cfgOf(map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"FROM_CFG": cty.StringVal("cfg")})})
	desc, err := New().Describe(context.Background(), cfg)
	if err != nil || desc.Env["FROM_CFG"] != "cfg" {
		t.Fatalf("Describe = %+v, %v; want the block's env", desc, err)
	}
	sb, _ := create(t, cfg, func(r *sdk.CreateRequest) { maps.Copy(r.Env, desc.Env) })
	if info := sb.Info(); info.RepoPath != "/home/agent/workspace" || info.HomePath != "/home/agent" || info.ID == "" {
		t.Fatalf("info %+v", info)
	}

	res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: `echo out; echo err >&2; printf 'no newline'; exit 3`})
	if res.ExitCode != 3 || strings.Join(o.Stdout, "|") != "out|no newline" || strings.Join(o.Stderr, "|") != "err" {
		t.Fatalf("got %+v %q %q", res, o.Stdout, o.Stderr)
	}
	_, o = kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"cat"}, Stdin: []byte("line1\nline2\n")})
	if strings.Join(o.Stdout, "|") != "line1|line2" {
		t.Fatalf("stdin: %q", o.Stdout)
	}
	_, o = kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"sh", "-c", `pwd; echo "$HOME $SANDDUNE_TEST $FROM_CFG $X"; id -u`},
		Env: map[string]string{"X": "x"}})
	want := fmt.Sprintf("/home/agent/workspace|/home/agent 1 cfg x|%d", os.Getuid())
	if strings.Join(o.Stdout, "|") != want {
		t.Fatalf("env/cwd: %q, want %q", o.Stdout, want)
	}
	kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"mkdir", "-p", "sub/dir"}})
	_, o = kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"pwd"}, Cwd: "sub/dir"})
	if o.Stdout[0] != "/home/agent/workspace/sub/dir" {
		t.Fatalf("cwd: %q", o.Stdout)
	}
	_, o = kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"touch", "/home/agent/.written"}})
	if len(o.Stderr) > 0 {
		t.Fatalf("home not writable: %q", o.Stderr)
	}
	if _, err := sb.Exec(context.Background(), sdk.ExecRequest{Argv: []string{"true"}, Cwd: "../../etc"}, func(sdk.OutputLine) {}); err == nil {
		t.Fatal("cwd leaving the workspace accepted")
	}
	res, _ = kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"no-such-binary"}})
	if res.ExitCode == 0 {
		t.Fatal("missing binary reported success")
	}
	// Long lines arrive in pieces.
	res, o = kittest.Exec(t, sb, sdk.ExecRequest{Shell: fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a; echo; echo end", sdk.MaxLineBytes*2+10)})
	if partial(o) != 2 || o.Stdout[len(o.Stdout)-1] != "end" || len(o.Stdout[2]) != 10 {
		t.Fatalf("long line: %d partial, %d lines", partial(o), len(o.Stdout))
	}
}

func TestExecSudo(t *testing.T) {
	requireDocker(t)
	sb, _ := create(t, cfgOf(nil), func(r *sdk.CreateRequest) { r.HostUID, r.HostGID = 1000, 1000 })
	_, o := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"id", "-u"}})
	_, so := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"id", "-u"}, Sudo: true})
	if o.Stdout[0] != "1000" || so.Stdout[0] != "0" {
		t.Fatalf("id -u: %q, sudo: %q", o.Stdout, so.Stdout)
	}
}

// A file the agent writes in the worktree belongs to the host user, and the
// home directory belongs to the container user.
func TestWorktreeFilesOwnedByHostUser(t *testing.T) {
	requireDocker(t)
	for _, tc := range []struct {
		name     string
		attrs    map[string]cty.Value
		uid, gid int
		wantUID  int
	}{
		{"host-uid", nil, 1000, 1001, 1000},
		{"container-uid", map[string]cty.Value{"container_uid": cty.NumberIntVal(1234), "container_gid": cty.NumberIntVal(1235)}, 1000, 1000, 1234},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb, req := create(t, cfgOf(tc.attrs), func(r *sdk.CreateRequest) { r.HostUID, r.HostGID = tc.uid, tc.gid })
			// t.TempDir is root-only (0700) when tests run as root; open it for the test UID.
			_ = os.Chmod(req.WorktreePath, 0o777)
			res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: `echo hi > agent.txt && touch "$HOME/ok" && stat -c %u "$HOME"`})
			if res.ExitCode != 0 {
				t.Fatalf("exit %d: %q", res.ExitCode, o.Stderr)
			}
			fi, err := os.Stat(filepath.Join(req.WorktreePath, "agent.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if uid := statUID(fi); uid != tc.wantUID {
				t.Fatalf("agent.txt owned by %d, want %d", uid, tc.wantUID)
			}
			if o.Stdout[0] != fmt.Sprint(tc.wantUID) {
				t.Fatalf("home owned by %q, want %d", o.Stdout[0], tc.wantUID)
			}
		})
	}
}

// selinux_label relabels every bind (z: shared; Z: private, but the shared
// git metadata stays shared), through docker's Binds strings.
func TestSELinuxLabelRelabelsBinds(t *testing.T) {
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
	cli := requireDocker(t)
	sb, _ := create(t, cfgOf(map[string]cty.Value{
		"cpus":       cty.NumberFloatVal(0.5),
		"memory":     cty.StringVal("256m"),
		"pids_limit": cty.NumberIntVal(64),
	}), nil)
	in, err := cli.ContainerInspect(context.Background(), sb.ID)
	if err != nil {
		t.Fatal(err)
	}
	hc := in.HostConfig
	if hc.NanoCPUs != 500_000_000 || hc.Memory != 256<<20 || hc.PidsLimit == nil || *hc.PidsLimit != 64 {
		t.Fatalf("NanoCPUs %d Memory %d PidsLimit %v", hc.NanoCPUs, hc.Memory, hc.PidsLimit)
	}
	if in.Config.Labels[sdk.LabelRun] == "" || in.Config.User != fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()) {
		t.Fatalf("labels %v user %q", in.Config.Labels, in.Config.User)
	}
}

// network = "none" blocks a connection to a listener on the docker bridge
// gateway, which the default network reaches.
func TestNetworkNoneBlocksConnections(t *testing.T) {
	cli := requireDocker(t)
	gw := bridgeGateway(t, cli)
	ln, err := net.Listen("tcp", net.JoinHostPort(gw, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	probe := sdk.ExecRequest{Argv: []string{"bash", "-c", fmt.Sprintf(`exec 3<>/dev/tcp/%s/%d && head -n1 <&3`, gw, port)}, Timeout: 20 * time.Second}

	open, _ := create(t, cfgOf(nil), nil)
	res, o := kittest.Exec(t, open, probe)
	if res.ExitCode != 0 || len(o.Stdout) == 0 || o.Stdout[0] != "hello" {
		t.Fatalf("default network cannot reach the listener (test is void): %+v %q %q", res, o.Stdout, o.Stderr)
	}
	closed, _ := create(t, cfgOf(map[string]cty.Value{"network": cty.StringVal("none")}), nil)
	res, o = kittest.Exec(t, closed, probe)
	if res.ExitCode == 0 || len(o.Stdout) > 0 {
		t.Fatalf(`network "none" reached the host listener: %+v %q`, res, o.Stdout)
	}
}

// bridgeGateway is the host's address on docker's default bridge.
func bridgeGateway(t *testing.T, cli *client.Client) string {
	t.Helper()
	br, err := cli.NetworkInspect(context.Background(), "bridge", network.InspectOptions{})
	if err != nil || len(br.IPAM.Config) == 0 {
		t.Fatalf("bridge network: %v %+v", err, br.IPAM)
	}
	if gw := br.IPAM.Config[0].Gateway; gw != "" {
		return gw
	}
	// Older daemons leave Gateway empty: it is the subnet's first address.
	_, subnet, err := net.ParseCIDR(br.IPAM.Config[0].Subnet)
	if err != nil {
		t.Fatal(err)
	}
	ip := subnet.IP.To4()
	return net.IPv4(ip[0], ip[1], ip[2], ip[3]+1).String()
}

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

func TestCancelKillsProcessTree(t *testing.T) {
	cli := requireDocker(t)
	sb, _ := create(t, cfgOf(nil), nil)
	baseline := len(topCommands(t, cli, sb.ID))

	for _, mode := range []string{"cancel", "timeout", "sudo-cancel"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req := sdk.ExecRequest{
				// A detached grandchild in its own session, and a child that ignores TERM.
				Shell: `setsid sleep 1001 & (trap '' TERM; sleep 1002) & echo ready; wait`,
				Sudo:  mode == "sudo-cancel",
			}
			if mode == "timeout" {
				req.Timeout = 2 * time.Second
			}
			var once sync.Once
			res, err := sb.Exec(ctx, req, func(l sdk.OutputLine) {
				if string(l.Text) == "ready" && mode != "timeout" {
					once.Do(cancel)
				}
			})
			switch mode {
			case "timeout":
				if err != nil || !res.TimedOut {
					t.Fatalf("timeout: %+v %v", res, err)
				}
			default:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("cancel: %+v %v", res, err)
				}
			}
			if cmds := topCommands(t, cli, sb.ID); len(cmds) != baseline {
				t.Fatalf("processes left: %q", cmds)
			}
		})
	}
}

func TestCloseRemovesContainer(t *testing.T) {
	cli := requireDocker(t)
	sb, req := create(t, cfgOf(nil), nil)
	p := New().(*Provider)
	rs, err := p.ListResources(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rs {
		found = found || (r.ID == sb.ID && r.Labels[sdk.LabelRun] == req.RunID)
	}
	if !found {
		t.Fatalf("ListResources does not list %s: %+v", sb.ID, rs)
	}
	for i := 0; i < 2; i++ {
		if err := sb.Close(context.Background()); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	cs, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", sdk.LabelRun+"="+req.RunID))})
	if err != nil || len(cs) != 0 {
		t.Fatalf("containers left: %v %v", cs, err)
	}
	if _, err := sb.Exec(context.Background(), sdk.ExecRequest{Argv: []string{"true"}}, func(sdk.OutputLine) {}); err == nil {
		t.Fatal("Exec after Close succeeded")
	}
	if err := p.RemoveResource(context.Background(), sb.ID); err != nil {
		t.Fatalf("RemoveResource of a gone container: %v", err)
	}
}

func TestCopyInOut(t *testing.T) {
	requireDocker(t)
	sb, req := create(t, cfgOf(nil), func(r *sdk.CreateRequest) { r.HostUID, r.HostGID = 1000, 1000 })
	src := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, "d", "e"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "d", "e", "f.txt"), []byte("deep"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "x.sh"), []byte("#!/bin/sh\necho x\n"), 0o755))
	must(t, os.Symlink("x.sh", filepath.Join(src, "link")))
	ctx := context.Background()

	must(t, sb.CopyIn(ctx, src, "/home/agent/new/place"))
	must(t, sb.CopyIn(ctx, filepath.Join(src, "x.sh"), "rel/x.sh"))
	res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: `cat /home/agent/new/place/d/e/f.txt; echo; ./rel/x.sh; readlink /home/agent/new/place/link; stat -c %u /home/agent/new /home/agent/new/place/d/e/f.txt; touch /home/agent/new/place/d/ok`})
	if res.ExitCode != 0 || strings.Join(o.Stdout, "|") != "deep|x|x.sh|1000|1000" {
		t.Fatalf("after copy in: %+v %q %q", res, o.Stdout, o.Stderr)
	}
	if _, err := os.Stat(filepath.Join(req.WorktreePath, "rel", "x.sh")); err != nil {
		t.Fatalf("copy into the workspace did not land in the worktree: %v", err)
	}

	dst := filepath.Join(t.TempDir(), "out")
	must(t, sb.CopyOut(ctx, "/home/agent/new/place", dst))
	if b, err := os.ReadFile(filepath.Join(dst, "d", "e", "f.txt")); err != nil || string(b) != "deep" {
		t.Fatalf("copy out dir: %q %v", b, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "link")); err != nil || l != "x.sh" {
		t.Fatalf("symlink: %q %v", l, err)
	}
	must(t, sb.CopyOut(ctx, "rel/x.sh", filepath.Join(dst, "single")))
	if fi, err := os.Stat(filepath.Join(dst, "single")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("copy out file: %v %v", fi, err)
	}
	if err := sb.CopyOut(ctx, "missing", filepath.Join(dst, "m")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing source: %v", err)
	}
	for _, bad := range []string{"../../../etc", "/etc/passwd"} {
		if err := sb.CopyIn(ctx, src, bad); err == nil {
			t.Errorf("CopyIn to %q accepted", bad)
		}
		if err := sb.CopyOut(ctx, bad, filepath.Join(dst, "bad")); err == nil {
			t.Errorf("CopyOut of %q accepted", bad)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A commit made inside the container on a real worktree lands on the
// worktree's branch in the host repo, with only the git metadata mounted.
func TestGitCommitInWorktree(t *testing.T) {
	requireDocker(t)
	w := kittest.NewWorktree(t, t.TempDir())
	sb, _ := create(t, cfgOf(nil), func(r *sdk.CreateRequest) {
		r.HostRepoPath, r.WorktreePath = w.Repo, w.Path
		r.GitMounts = w.GitMounts
	})
	res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: `echo change > agent.txt && git add agent.txt && git -c user.name=Agent -c user.email=a@example.invalid commit -q -m "agent commit" && git rev-parse --abbrev-ref HEAD`})
	if res.ExitCode != 0 {
		t.Fatalf("commit in container: %+v %q %q", res, o.Stdout, o.Stderr)
	}
	if o.Stdout[len(o.Stdout)-1] != w.Branch {
		t.Fatalf("branch in container: %q", o.Stdout)
	}
	if got := kittest.Git(t, w.Repo, "log", "-1", "--format=%s", w.Branch); got != "agent commit" {
		t.Fatalf("host branch head: %q", got)
	}
	if got := kittest.Git(t, w.Repo, "log", "-1", "--format=%s", "main"); got != "initial" {
		t.Fatalf("main moved: %q", got)
	}
	if res, _ := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"git", "config", "core.hooksPath", "/tmp/evil"}}); res.ExitCode == 0 {
		t.Fatal("the agent could write the host repo's git config")
	}
}

func TestPreflight(t *testing.T) {
	requireDocker(t)
	p := New()
	ctx := context.Background()
	req := sdk.PreflightRequest{Config: cfgOf(nil), HostRepoPath: t.TempDir(), HostUID: 1000, HostGID: 1000}
	if err := p.Preflight(ctx, req); err != nil {
		t.Fatalf("preflight with the test image: %v", err)
	}
	for name, tc := range map[string]struct {
		attrs map[string]cty.Value
		want  string
	}{
		"no image":      {map[string]cty.Value{"image": cty.StringVal("sanddune-no-such-image:x")}, "sanddune docker build-image"},
		"default name":  {map[string]cty.Value{"image": cty.NullVal(cty.String)}, "sanddune docker build-image"},
		"no network":    {map[string]cty.Value{"network": cty.StringVal("sanddune-no-such-net")}, "docker network create"},
		"too many cpus": {map[string]cty.Value{"cpus": cty.NumberIntVal(4096)}, "lower cpus"},
		"bad config":    {map[string]cty.Value{"memory": cty.StringVal("huge")}, "memory"},
		"mount": {map[string]cty.Value{"mount": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"host_path": cty.StringVal("does-not-exist"), "sandbox_path": cty.StringVal("/x"), "readonly": cty.True,
		})})}, "does not exist"},
	} {
		req := req
		req.Config = cfgOf(tc.attrs)
		err := p.Preflight(ctx, req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error mentioning %q", name, err, tc.want)
		}
	}
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	if err := New().Preflight(ctx, req); err == nil || !strings.Contains(err.Error(), "start Docker") {
		t.Errorf("unreachable daemon: %v", err)
	}
}

// build-image builds .sanddune/Dockerfile with the host UID/GID; preflight
// then accepts that UID and rejects another one; remove-image removes it.
func TestBuildImageCommand(t *testing.T) {
	requireDocker(t)
	p := New().(*Provider)
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "Build Repo")
	must(t, os.MkdirAll(filepath.Join(repo, ".sanddune", "worktrees", "big"), 0o755))
	must(t, os.WriteFile(filepath.Join(repo, ".sanddune", "Dockerfile"), []byte(fmt.Sprintf(
		"FROM %s\nARG AGENT_UID=1000\nARG AGENT_GID=1000\nCOPY . /ctx/\nUSER ${AGENT_UID}:${AGENT_GID}\n", testImage())), 0o644))
	must(t, os.WriteFile(filepath.Join(repo, ".sanddune", ".env"), []byte("SECRET=1\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(repo, ".sanddune", "prompt.md"), []byte("p\n"), 0o644))
	image := "sanddune:build-repo"
	var lines []string
	code, err := p.RunCommand(ctx, sdk.RunCommandRequest{Name: "build-image", Cwd: repo, HostRepoPath: repo, HostUID: 4321, HostGID: 4321},
		func(l sdk.OutputLine) { lines = append(lines, string(l.Text)) })
	if err != nil || code != 0 {
		t.Fatalf("build-image: %d %v\n%s", code, err, strings.Join(lines, "\n"))
	}
	t.Cleanup(func() {
		_, _ = p.RunCommand(ctx, sdk.RunCommandRequest{Name: "remove-image", Args: []string{"--image-name", image}}, func(sdk.OutputLine) {})
	})
	if !strings.Contains(strings.Join(lines, "\n"), "Step") {
		t.Errorf("no build progress streamed: %q", lines)
	}
	cfg := cfgOf(map[string]cty.Value{"image": cty.NullVal(cty.String)})
	if err := p.Preflight(ctx, sdk.PreflightRequest{Config: cfg, HostRepoPath: repo, HostUID: 4321, HostGID: 4321}); err != nil {
		t.Fatalf("preflight after build-image: %v", err)
	}
	err = p.Preflight(ctx, sdk.PreflightRequest{Config: cfg, HostRepoPath: repo, HostUID: 1000, HostGID: 1000})
	if err == nil || !strings.Contains(err.Error(), "UID mismatch") || !strings.Contains(err.Error(), "container_uid = 4321") {
		t.Fatalf("UID mismatch not caught: %v", err)
	}
	// The context left out .env and worktrees.
	sb, _ := create(t, cfg, func(r *sdk.CreateRequest) { r.HostRepoPath, r.HostUID, r.HostGID = repo, 4321, 4321 })
	_, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: "ls -A /ctx"})
	if strings.Join(o.Stdout, " ") != "Dockerfile prompt.md" {
		t.Fatalf("build context: %q", o.Stdout)
	}
	must(t, sb.Close(ctx))

	code, err = p.RunCommand(ctx, sdk.RunCommandRequest{Name: "remove-image", Args: []string{"--image-name", image}}, func(sdk.OutputLine) {})
	if err != nil || code != 0 {
		t.Fatalf("remove-image: %d %v", code, err)
	}
	if err := p.Preflight(ctx, sdk.PreflightRequest{Config: cfg, HostRepoPath: repo, HostUID: 4321}); err == nil {
		t.Fatal("image still there after remove-image")
	}
	if code, err := p.RunCommand(ctx, sdk.RunCommandRequest{Name: "build-image", Args: []string{"--bogus"}}, func(sdk.OutputLine) {}); code != 2 || err == nil {
		t.Fatalf("bad flag: %d %v", code, err)
	}
	if code, err := p.RunCommand(ctx, sdk.RunCommandRequest{Name: "build-image", Cwd: t.TempDir()}, func(sdk.OutputLine) {}); code != 1 || err == nil || !strings.Contains(err.Error(), "sanddune init") {
		t.Fatalf("missing Dockerfile: %d %v", code, err)
	}
}

// A container removed or stopped from outside mid-exec is reported as the
// sandbox gone, not as the command's exit code 137.
func TestExecInContainerRemovedFromOutside(t *testing.T) {
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
