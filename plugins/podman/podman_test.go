package podman

import (
	"context"
	"encoding/json"
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

	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/containerkit"
	"github.com/missingstudio/sanddune/sdk/sandboxkit/kittest"
	"github.com/zclconf/go-cty/cty"
)

func TestConfigureDiagnostics(t *testing.T) {
	t.Parallel()
	p := New()
	good := sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{
		"image":          cty.StringVal("img"),
		"env":            cty.MapVal(map[string]cty.Value{"A": cty.StringVal("1")}),
		"network":        cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
		"cpus":           cty.NumberFloatVal(1.5),
		"memory":         cty.StringVal("512m"),
		"pids_limit":     cty.NumberIntVal(100),
		"devices":        cty.ListVal([]cty.Value{cty.StringVal("/dev/kvm"), cty.StringVal("/dev/a:/dev/b:rw")}),
		"userns":         cty.StringVal("auto"),
		"selinux_label":  cty.StringVal("Z"),
		"runtime":        cty.StringVal("runc"),
		"cgroup_manager": cty.StringVal("cgroupfs"),
		"ulimits":        cty.MapVal(map[string]cty.Value{"nofile": cty.StringVal("1024:2048"), "nproc": cty.StringVal("-1")}),
		"binary":         cty.StringVal("/usr/bin/podman"),
		"mount": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"host_path": cty.StringVal("~/.npm"), "sandbox_path": cty.StringVal("~/.npm"), "readonly": cty.True,
		})}),
	})}
	diags, err := p.Configure(context.Background(), good)
	if err != nil || diags.HasErrors() {
		t.Fatalf("good config: %v %v", diags, err)
	}
	c, _ := decodeConfig(good)
	if c.Memory != 512<<20 || c.CPUs != 1.5 || len(c.Networks) != 2 || c.Mounts[0].SandboxPath != "/home/agent/.npm" ||
		c.userns(true) != "auto" || c.SELinuxLabel != "Z" || c.Ulimits["nofile"] != "1024:2048" || c.Devices[1].ContainerPath != "/dev/b" {
		t.Fatalf("decoded %+v", c)
	}
	if c, _ := decodeConfig(sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"selinux_label": cty.False})}); c.SELinuxLabel != "" {
		t.Fatalf("selinux_label = false: %q", c.SELinuxLabel)
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
		{map[string]cty.Value{"devices": cty.ListVal([]cty.Value{cty.StringVal("kvm")})}, "devices.0"},
		{map[string]cty.Value{"selinux_label": cty.StringVal("y")}, "selinux_label"},
		{map[string]cty.Value{"selinux_label": cty.True}, "selinux_label"},
		{map[string]cty.Value{"cgroup_manager": cty.StringVal("upstart")}, "cgroup_manager"},
		{map[string]cty.Value{"ulimits": cty.MapVal(map[string]cty.Value{"files": cty.StringVal("1")})}, "ulimits"},
		{map[string]cty.Value{"ulimits": cty.MapVal(map[string]cty.Value{"nofile": cty.StringVal("many")})}, "ulimits"},
		{map[string]cty.Value{"socket": cty.StringVal("/run/podman/podman.sock")}, "socket"},
		{map[string]cty.Value{"socket": cty.StringVal("unix:///run/podman/podman.sock"), "runtime": cty.StringVal("runc")}, "runtime"},
		{map[string]cty.Value{"socket": cty.StringVal("unix:///run/podman/podman.sock"), "cgroup_manager": cty.StringVal("cgroupfs")}, "cgroup_manager"},
		{map[string]cty.Value{"mount": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"host_path": cty.StringVal("x"), "sandbox_path": cty.StringVal("../up"), "readonly": cty.False,
		})})}, "mount.0.sandbox_path"},
	} {
		diags, _ := p.Configure(context.Background(), sdk.Config{Value: cty.ObjectVal(tc.attrs)})
		if !diags.HasErrors() || diags[0].Attribute != tc.want {
			t.Errorf("%v: want an error on %s, got %#v", tc.attrs, tc.want, diags)
		}
	}
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

func TestExec(t *testing.T) {
	t.Parallel()
	// The block's env reaches commands the way the host passes it: Describe
	// gives it, the host layers it into CreateRequest.Env.
	cfg := cfgOf(t, map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"FROM_CFG": cty.StringVal("cfg")})})
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
	// A prompt holding podman's default detach keys (ctrl-p ctrl-q) arrives whole.
	_, o = kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"od", "-An", "-c"}, Stdin: []byte("a\x10\x11b\n")})
	if got := strings.Join(strings.Fields(strings.Join(o.Stdout, " ")), " "); got != `a 020 021 b \n` {
		t.Fatalf("stdin with ctrl-p ctrl-q: %q", got)
	}
	_, o = kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"sh", "-c", `pwd; echo "$HOME $SANDDUNE_TEST $FROM_CFG $X"; id -u`},
		Env: map[string]string{"X": "multi\nline"}})
	want := fmt.Sprintf("/home/agent/workspace|/home/agent 1 cfg multi|line|%d", os.Getuid())
	if strings.Join(o.Stdout, "|") != want {
		t.Fatalf("env/cwd: %q, want %q", o.Stdout, want)
	}
	_, o = kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"touch", "/home/agent/.written"}})
	if len(o.Stderr) > 0 {
		t.Fatalf("home not writable: %q", o.Stderr)
	}
	res, _ = kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"no-such-binary"}})
	if res.ExitCode == 0 {
		t.Fatal("missing binary reported success")
	}
}

// A file the agent writes in the worktree belongs to the host user (rootful
// podman runs the container as --user UID:GID), the home directory to the
// container user, and sudo is root.
func TestWorktreeFilesOwnedByHostUser(t *testing.T) {
	t.Parallel()
	sb, req := create(t, cfgOf(t, nil), func(r *sdk.CreateRequest) { r.HostUID, r.HostGID = 1000, 1001 })
	// t.TempDir is root-only (0700) when tests run as root; open it for the test UID.
	_ = os.Chmod(req.WorktreePath, 0o777)
	res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: `echo hi > agent.txt && touch "$HOME/ok" && stat -c %u:%g "$HOME"`})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %q", res.ExitCode, o.Stderr)
	}
	fi, err := os.Stat(filepath.Join(req.WorktreePath, "agent.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := statUID(fi); uid != 1000 {
		t.Fatalf("agent.txt owned by %d, want 1000", uid)
	}
	if o.Stdout[0] != "1000:1001" {
		t.Fatalf("home owned by %q, want 1000:1001", o.Stdout[0])
	}
	_, so := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"id", "-u"}, Sudo: true})
	if so.Stdout[0] != "0" {
		t.Fatalf("sudo id -u: %q", so.Stdout)
	}
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
	sb, req := create(t, cfgOf(t, map[string]cty.Value{
		"cpus":       cty.NumberFloatVal(0.5),
		"memory":     cty.StringVal("256m"),
		"pids_limit": cty.NumberIntVal(64),
	}), nil)
	hc := inspect(t, sb.ID)["HostConfig"].(map[string]any)
	if hc["NanoCpus"] != 5e8 || hc["Memory"] != float64(256<<20) || hc["PidsLimit"] != 64.0 {
		t.Fatalf("NanoCpus %v Memory %v PidsLimit %v", hc["NanoCpus"], hc["Memory"], hc["PidsLimit"])
	}
	// The limits hold inside: the cgroup says so.
	_, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: `cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max`})
	if len(o.Stdout) == 0 || o.Stdout[0] != "64" {
		t.Fatalf("pids.max inside: %q %q", o.Stdout, o.Stderr)
	}
	if got := containersOf(t, req.RunID); len(got) != 1 {
		t.Fatalf("containers labelled with the run: %v", got)
	}
}

// network = "none" blocks a connection to a listener on the host that the
// default network reaches.
func TestNetworkNoneBlocksConnections(t *testing.T) {
	t.Parallel()
	open, _ := create(t, cfgOf(t, nil), nil)
	_, o := kittest.Exec(t, open, sdk.ExecRequest{Shell: `ip route 2>/dev/null | awk '/default/ {print $3}' || true; awk 'NR>1 && $2=="00000000" {print $3}' /proc/net/route`})
	gw := ""
	for _, l := range o.Stdout {
		if l == "" {
			continue
		}
		if ip := net.ParseIP(l); ip != nil {
			gw = l
			break
		}
		if len(l) == 8 { // little-endian hex from /proc/net/route
			var b [4]byte
			if _, err := fmt.Sscanf(l, "%02x%02x%02x%02x", &b[3], &b[2], &b[1], &b[0]); err == nil {
				gw = net.IPv4(b[0], b[1], b[2], b[3]).String()
				break
			}
		}
	}
	if gw == "" {
		t.Fatalf("no default gateway in the container: %q", o.Stdout)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(gw, "0"))
	if err != nil {
		t.Fatalf("listen on the container network's gateway %s: %v", gw, err)
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
	res, o := kittest.Exec(t, open, probe)
	if res.ExitCode != 0 || len(o.Stdout) == 0 || o.Stdout[0] != "hello" {
		t.Fatalf("default network cannot reach the listener (test is void): %+v %q %q", res, o.Stdout, o.Stderr)
	}
	closed, _ := create(t, cfgOf(t, map[string]cty.Value{"network": cty.StringVal("none")}), nil)
	res, o = kittest.Exec(t, closed, probe)
	if res.ExitCode == 0 || len(o.Stdout) > 0 {
		t.Fatalf(`network "none" reached the host listener: %+v %q`, res, o.Stdout)
	}
}

// processes lists the commands running in a container.
func processes(t *testing.T, id string) []string {
	t.Helper()
	lines := strings.Split(podman(t, "top", id, "args"), "\n")
	return lines[1:]
}

func TestCancelKillsProcessTree(t *testing.T) {
	t.Parallel()
	sb, _ := create(t, cfgOf(t, nil), nil)
	baseline := len(processes(t, sb.ID))
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
				req.Timeout = 3 * time.Second
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
			if ps := processes(t, sb.ID); len(ps) != baseline {
				t.Fatalf("processes left: %q", ps)
			}
		})
	}
}

func TestCloseRemovesContainer(t *testing.T) {
	t.Parallel()
	sb, req := create(t, cfgOf(t, nil), nil)
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
		t.Fatalf("ListResources does not list %s", sb.ID)
	}
	for i := 0; i < 2; i++ {
		if err := sb.Close(context.Background()); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	if left := containersOf(t, req.RunID); len(left) != 0 {
		t.Fatalf("containers left: %v", left)
	}
	if _, err := sb.Exec(context.Background(), sdk.ExecRequest{Argv: []string{"true"}}, func(sdk.OutputLine) {}); err == nil {
		t.Fatal("Exec after Close succeeded")
	}
	if err := p.RemoveResource(context.Background(), sb.ID); err != nil {
		t.Fatalf("RemoveResource of a gone container: %v", err)
	}
}

// gc removes a container through ListResources/RemoveResource with podman's
// defaults, though the container was created with this host's runtime and
// cgroup manager settings.
func TestRemoveResourceWithDefaults(t *testing.T) {
	t.Parallel()
	sb, req := create(t, cfgOf(t, nil), nil)
	// Leave it, as a killed sanddune would: the sandbox counts as closed.
	must(t, sb.CloseWith(context.Background(), time.Minute, func(context.Context) error { return nil }))
	if err := New().(*Provider).RemoveResource(context.Background(), sb.ID); err != nil {
		t.Fatalf("RemoveResource: %v", err)
	}
	if left := containersOf(t, req.RunID); len(left) != 0 {
		t.Fatalf("containers left: %v", left)
	}
}

// A commit made inside the container on a real worktree lands on the
// worktree's branch in the host repo, with only the git metadata mounted.
func TestGitCommitInWorktree(t *testing.T) {
	t.Parallel()
	w := kittest.NewWorktree(t, t.TempDir())
	sb, _ := create(t, cfgOf(t, nil), func(r *sdk.CreateRequest) {
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
	if res, _ := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"git", "config", "core.hooksPath", "/tmp/evil"}}); res.ExitCode == 0 {
		t.Fatal("the agent could write the host repo's git config")
	}
}

func TestPreflight(t *testing.T) {
	t.Parallel()
	p := New()
	ctx := context.Background()
	req := sdk.PreflightRequest{Config: cfgOf(t, nil), HostRepoPath: t.TempDir(), HostUID: os.Getuid(), HostGID: os.Getgid()}
	if err := p.Preflight(ctx, req); err != nil {
		t.Fatalf("preflight with the test image: %v", err)
	}
	for name, tc := range map[string]struct {
		attrs map[string]cty.Value
		want  string
	}{
		"no image":     {map[string]cty.Value{"image": cty.StringVal("sanddune-no-such-image:x")}, "sanddune podman build-image --image-name sanddune-no-such-image:x"},
		"default name": {map[string]cty.Value{"image": cty.NullVal(cty.String)}, "sanddune podman build-image`"},
		"no network":   {map[string]cty.Value{"network": cty.StringVal("sanddune-no-such-net")}, "podman network create"},
		"no binary":    {map[string]cty.Value{"binary": cty.StringVal("/nonexistent/podman")}, "fix binary"},
		"bad config":   {map[string]cty.Value{"memory": cty.StringVal("huge")}, "memory"},
		"no runtime":   {map[string]cty.Value{"runtime": cty.StringVal("sanddune-no-such-runtime")}, `runtime "sanddune-no-such-runtime" not found`},
		"bad ulimit":   {map[string]cty.Value{"ulimits": cty.MapVal(map[string]cty.Value{"nofile": cty.StringVal("99999999:99999999")})}, "test container cannot start"},
		"mount": {map[string]cty.Value{"mount": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"host_path": cty.StringVal("does-not-exist"), "sandbox_path": cty.StringVal("/x"), "readonly": cty.True,
		})})}, "does not exist"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := req
			req.Config = cfgOf(t, tc.attrs)
			err := p.Preflight(ctx, req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// On a host where podman's defaults cannot start a container (here: crun
// on hybrid cgroups, nofile/nproc above the hard limits), preflight names
// the settings that make it start, and those settings do.
func TestPreflightNamesTheSettingsThisHostNeeds(t *testing.T) {
	t.Parallel()
	needed := requirePodman(t)
	if len(needed) == 0 {
		t.Skip("podman's defaults start containers on this host: nothing to detect")
	}
	bare := sdk.Config{Value: cty.ObjectVal(map[string]cty.Value{"image": cty.StringVal(testImage())})}
	err := New().Preflight(context.Background(), sdk.PreflightRequest{Config: bare, HostRepoPath: t.TempDir(), HostUID: os.Getuid(), HostGID: os.Getgid()})
	if err == nil || !strings.Contains(err.Error(), "add them to the sandbox block:") {
		t.Fatalf("preflight with podman's defaults: %v", err)
	}
	for name := range needed {
		if !strings.Contains(err.Error(), "\n  "+name+" = ") {
			t.Errorf("the message does not set %s:\n%v", name, err)
		}
	}
}

// build-image builds .sanddune/Containerfile with the host UID/GID and
// without secrets in the context; preflight then accepts the image for that
// UID and rejects another; remove-image removes it.
func TestBuildImageCommand(t *testing.T) {
	t.Parallel()
	host := requirePodman(t)
	p := New().(*Provider)
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "Build Repo")
	must(t, os.MkdirAll(filepath.Join(repo, ".sanddune", "worktrees", "big"), 0o755))
	must(t, os.WriteFile(filepath.Join(repo, ".sanddune", "Containerfile"), []byte(fmt.Sprintf(
		"FROM %s\nARG AGENT_UID=1000\nARG AGENT_GID=1000\nCOPY . /ctx/\nRUN echo $AGENT_UID > /built-for\nUSER ${AGENT_UID}:${AGENT_GID}\n", testImage())), 0o644))
	must(t, os.WriteFile(filepath.Join(repo, ".sanddune", ".env"), []byte("SECRET=1\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(repo, ".sanddune", "prompt.md"), []byte("p\n"), 0o644))
	image := "sanddune:build-repo-" + containerkit.RandomHex(3)
	args := []string{"--image-name", image}
	if rt, ok := host["runtime"]; ok {
		// RUN steps need this host's runtime too; without it, the error says so.
		var lines []string
		code, err := p.RunCommand(ctx, sdk.RunCommandRequest{Name: "build-image", Args: args, Cwd: repo, HostRepoPath: repo, HostUID: 4321, HostGID: 4321},
			func(l sdk.OutputLine) { lines = append(lines, string(l.Text)) })
		if code != 1 || err == nil || !strings.Contains(err.Error(), "pass the same --runtime") {
			t.Fatalf("build-image without this host's runtime: %d %v\n%s", code, err, strings.Join(lines, "\n"))
		}
		args = append(args, "--runtime", rt.AsString())
	}
	var lines []string
	code, err := p.RunCommand(ctx, sdk.RunCommandRequest{Name: "build-image", Args: args, Cwd: repo, HostRepoPath: repo, HostUID: 4321, HostGID: 4321},
		func(l sdk.OutputLine) { lines = append(lines, string(l.Text)) })
	if err != nil || code != 0 {
		t.Fatalf("build-image: %d %v\n%s", code, err, strings.Join(lines, "\n"))
	}
	t.Cleanup(func() {
		_, _ = p.RunCommand(ctx, sdk.RunCommandRequest{Name: "remove-image", Args: []string{"--image-name", image}}, func(sdk.OutputLine) {})
	})
	if !strings.Contains(strings.Join(lines, "\n"), "STEP") {
		t.Errorf("no build progress streamed: %q", lines)
	}
	cfg := cfgOf(t, map[string]cty.Value{"image": cty.StringVal(image)})
	if err := p.Preflight(ctx, sdk.PreflightRequest{Config: cfg, HostRepoPath: repo, HostUID: 4321, HostGID: 4321}); err != nil {
		t.Fatalf("preflight after build-image: %v", err)
	}
	err = p.Preflight(ctx, sdk.PreflightRequest{Config: cfg, HostRepoPath: repo, HostUID: 1000, HostGID: 1000})
	if err == nil || !strings.Contains(err.Error(), "UID mismatch") {
		t.Fatalf("UID mismatch not caught: %v", err)
	}
	sb, _ := create(t, cfg, func(r *sdk.CreateRequest) { r.HostRepoPath, r.HostUID, r.HostGID = repo, 4321, 4321 })
	_, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: "cat /built-for; ls -A /ctx"})
	if strings.Join(o.Stdout, " ") != "4321 Containerfile prompt.md" {
		t.Fatalf("build context: %q", o.Stdout)
	}
	must(t, sb.Close(ctx))

	code, err = p.RunCommand(ctx, sdk.RunCommandRequest{Name: "remove-image", Args: []string{"--image-name", image}}, func(sdk.OutputLine) {})
	if err != nil || code != 0 {
		t.Fatalf("remove-image: %d %v", code, err)
	}
	if code, err := p.RunCommand(ctx, sdk.RunCommandRequest{Name: "remove-image", Args: []string{"--image-name", image}}, func(sdk.OutputLine) {}); code != 1 || err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("remove a missing image: %d %v", code, err)
	}
	if code, err := p.RunCommand(ctx, sdk.RunCommandRequest{Name: "build-image", Args: []string{"--bogus"}}, func(sdk.OutputLine) {}); code != 2 || err == nil {
		t.Fatalf("bad flag: %d %v", code, err)
	}
	if code, err := p.RunCommand(ctx, sdk.RunCommandRequest{Name: "build-image", Cwd: t.TempDir()}, func(sdk.OutputLine) {}); code != 1 || err == nil || !strings.Contains(err.Error(), "sanddune init") {
		t.Fatalf("missing Containerfile: %d %v", code, err)
	}
}

// Where podman is not installed, preflight and Create say how to install
// it, and gc finds nothing to remove rather than failing. Serial: it
// empties PATH.
func TestWithoutPodman(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	p := New().(*Provider)
	ctx := context.Background()
	rs, err := p.ListResources(ctx)
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
