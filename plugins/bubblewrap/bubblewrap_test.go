package bubblewrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/sdk"
)

// requireBwrap skips (fails under SANDDUNE_REQUIRE_ENGINES=1) when bwrap is
// missing or cannot create namespaces here.
func requireBwrap(t *testing.T) {
	t.Helper()
	err := New().Preflight(context.Background(), sdk.PreflightRequest{HostRepoPath: t.TempDir(), HostUID: os.Getuid(), HostGID: os.Getgid()})
	if err != nil {
		err = fmt.Errorf("%w (run scripts/ci-setup.sh as root)", err)
	}
	kittest.RequireEngine(t, "bubblewrap", err)
}

func cfgOf(attrs map[string]cty.Value) sdk.Config {
	if attrs == nil {
		return sdk.Config{Value: cty.EmptyObjectVal}
	}
	return sdk.Config{Value: cty.ObjectVal(attrs)}
}

func create(t *testing.T, cfg sdk.Config, mod func(*sdk.CreateRequest)) (*sandbox, sdk.CreateRequest) {
	t.Helper()
	wt := t.TempDir()
	id := "test-" + randomHex()
	req := sdk.CreateRequest{
		Config: cfg, RunID: id, RunName: t.Name(), HostRepoPath: wt, WorktreePath: wt,
		Env:     map[string]string{"SANDDUNE_TEST": "1"},
		Labels:  map[string]string{sdk.LabelRun: id, sdk.LabelSandbox: "sandbox.bubblewrap.test"},
		HostUID: os.Getuid(), HostGID: os.Getgid(),
	}
	if mod != nil {
		mod(&req)
	}
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

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestConfigureDiagnostics(t *testing.T) {
	t.Parallel()
	p := New()
	good := cfgOf(map[string]cty.Value{
		"env":     cty.MapVal(map[string]cty.Value{"A": cty.StringVal("1")}),
		"network": cty.StringVal("none"),
		"hide":    cty.ListValEmpty(cty.String),
		"mount": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"host_path": cty.StringVal("~/.cache"), "sandbox_path": cty.NullVal(cty.String), "readonly": cty.True,
		})}),
	})
	if diags, err := p.Configure(context.Background(), good); err != nil || diags.HasErrors() {
		t.Fatalf("good config: %v %v", diags, err)
	}
	c, _ := decodeConfig(good)
	if !c.NetworkNone || len(c.Hide) != 0 || !c.Mounts[0].ReadOnly {
		t.Fatalf("decoded %+v", c)
	}
	if c, _ := decodeConfig(cfgOf(nil)); len(c.Hide) != len(defaultHide) || c.NetworkNone {
		t.Fatalf("defaults %+v", c)
	}
	for _, tc := range []struct {
		attrs map[string]cty.Value
		want  string
	}{
		{map[string]cty.Value{"network": cty.StringVal("bridge")}, "network"},
		{map[string]cty.Value{"hide": cty.ListVal([]cty.Value{cty.StringVal("relative")})}, "hide.0"},
		{map[string]cty.Value{"mount": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"host_path": cty.StringVal("x"), "sandbox_path": cty.StringVal("../up"), "readonly": cty.False,
		})})}, "mount.0.sandbox_path"},
		{map[string]cty.Value{"mount": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"host_path": cty.StringVal(""), "sandbox_path": cty.StringVal("/x"), "readonly": cty.False,
		})})}, "mount.0.host_path"},
	} {
		diags, _ := p.Configure(context.Background(), cfgOf(tc.attrs))
		if !diags.HasErrors() || diags[0].Attribute != tc.want {
			t.Errorf("%v: want an error on %s, got %#v", tc.attrs, tc.want, diags)
		}
	}
}

// TestConfigureMountTargetThatCannotBeCreated: a mount at a sandbox path
// missing from the host's read-only root (such as /mnt/data) is refused
// at the attribute when the config is checked, instead of bwrap failing
// with "Can't mkdir" when the agent starts. Paths that exist, lie under
// /tmp, ~/, the worktree or another writable mount are accepted.
func TestConfigureMountTargetThatCannotBeCreated(t *testing.T) {
	t.Parallel()
	missing := "/sanddune-test-missing-" + randomHex() + "/data"
	mounts := func(ms ...[2]string) sdk.Config {
		var vs []cty.Value
		for _, m := range ms {
			vs = append(vs, cty.ObjectVal(map[string]cty.Value{
				"host_path": cty.StringVal(t.TempDir()), "sandbox_path": cty.StringVal(m[0]), "readonly": cty.BoolVal(m[1] == "ro"),
			}))
		}
		return cfgOf(map[string]cty.Value{"mount": cty.ListVal(vs)})
	}
	diags, err := New().Configure(context.Background(), mounts([2]string{"/tmp"}, [2]string{missing}))
	if err != nil || len(diags) != 1 || diags[0].Attribute != "mount.1.sandbox_path" || !strings.Contains(diags[0].Detail, missing) {
		t.Fatalf("want one error on mount.1.sandbox_path naming %s, got %v %v", missing, diags, err)
	}
	for _, ok := range [][][2]string{
		{{"/usr"}},                   // exists
		{{"/tmp/sanddune-new/data"}}, // under the sandbox's own /tmp
		{{"~/data"}}, {{"data/x"}},   // home, worktree
		{{"/opt"}, {"/opt/new/data"}}, // inside a writable mount
	} {
		if diags, err := New().Configure(context.Background(), mounts(ok...)); err != nil || diags.HasErrors() {
			t.Errorf("%v refused: %v %v", ok, diags, err)
		}
	}
	if diags, _ := New().Configure(context.Background(), mounts([2]string{"/opt", "ro"}, [2]string{"/opt/new/data"})); !diags.HasErrors() {
		t.Error("a path inside a read-only mount that does not exist was accepted")
	}
}

func TestExecEnvironment(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	// The block's env reaches commands the way the host passes it: Describe
	// gives it, the host layers it into CreateRequest.Env.
	cfg := cfgOf(map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"FROM_CFG": cty.StringVal("cfg")})})
	desc, err := New().Describe(context.Background(), cfg)
	if err != nil || desc.Env["FROM_CFG"] != "cfg" {
		t.Fatalf("Describe = %+v, %v; want the block's env", desc, err)
	}
	sb, req := create(t, cfg, func(r *sdk.CreateRequest) { maps.Copy(r.Env, desc.Env) })
	_, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: `pwd; echo "$HOME|$TMPDIR|$SANDDUNE_TEST|$FROM_CFG|$X"; echo "$PATH"; id -u; grep CapEff /proc/self/status; cat /proc/1/comm`,
		Env: map[string]string{"X": "x"}})
	want := []string{req.WorktreePath, sb.home + "|/tmp|1|cfg|x", os.Getenv("PATH"), fmt.Sprint(os.Getuid()), "CapEff:\t0000000000000000"}
	if len(o.Stdout) != 6 || strings.Join(o.Stdout[:5], "\n") != strings.Join(want, "\n") {
		t.Fatalf("got %q, want %q", o.Stdout, want)
	}
	if o.Stdout[5] != "bwrap" {
		t.Errorf("not in the sandbox's PID namespace: pid 1 is %q", o.Stdout[5])
	}
	if _, err := sb.Exec(context.Background(), sdk.ExecRequest{Argv: []string{"id"}, Sudo: true}, func(sdk.OutputLine) {}); !errors.Is(err, sdk.ErrNotSupported) {
		t.Errorf("sudo: %v, want ErrNotSupported", err)
	}
}

// The host root is read-only; the worktree, home and a per-sandbox /tmp
// (kept across execs, private from the host's) are writable.
func TestFilesystemView(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	hostTmp, err := os.CreateTemp("", "sanddune-host-visible-")
	must(t, err)
	hostTmp.Close()
	defer os.Remove(hostTmp.Name())
	must(t, os.MkdirAll("/var/tmp", 0o1777))

	sb, req := create(t, cfgOf(nil), nil)
	res, o := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"sh", "-c", `touch /usr/sanddune-x 2>/dev/null && echo root-writable
touch /var/tmp/sanddune-x-` + randomHex() + ` 2>/dev/null && echo var-writable
test -e "$1" && echo host-tmp-visible
echo w > in-worktree && echo t > /tmp/persist && echo h > "$HOME/h" && echo ok`, "sh", hostTmp.Name()}})
	if res.ExitCode != 0 || strings.Join(o.Stdout, ",") != "ok" {
		t.Fatalf("got %+v %q %q", res, o.Stdout, o.Stderr)
	}
	_, o = kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"cat", "/tmp/persist"}})
	if strings.Join(o.Stdout, ",") != "t" {
		t.Fatalf("/tmp not kept across execs: %q", o.Stdout)
	}
	fi, err := os.Stat(filepath.Join(req.WorktreePath, "in-worktree"))
	must(t, err)
	if uid := fi.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Getuid() {
		t.Errorf("worktree file owned by %d, want host uid %d", uid, os.Getuid())
	}
	if _, err := os.Stat(filepath.Join(os.TempDir(), "persist")); err == nil {
		t.Error("sandbox /tmp is the host /tmp")
	}
}

func TestHide(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	secretDir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(secretDir, "key"), []byte("secret\n"), 0o600))
	secretFile := filepath.Join(t.TempDir(), "token")
	must(t, os.WriteFile(secretFile, []byte("secret\n"), 0o600))
	// Sandbox /tmp is private anyway: use /var/tmp so that the paths are visible unless hidden.
	base, err := os.MkdirTemp("/var/tmp", "sanddune-hide-")
	must(t, err)
	defer os.RemoveAll(base)
	must(t, os.Rename(secretDir, filepath.Join(base, "dir")))
	must(t, os.Rename(secretFile, filepath.Join(base, "file")))
	shown := filepath.Join(base, "shown")
	must(t, os.WriteFile(shown, []byte("public\n"), 0o644))

	sb, _ := create(t, cfgOf(map[string]cty.Value{"hide": cty.ListVal([]cty.Value{
		cty.StringVal(filepath.Join(base, "dir")), cty.StringVal(filepath.Join(base, "file")), cty.StringVal("/nonexistent/x"),
	})}), nil)
	_, o := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"sh", "-c", `cat "$1/dir/key" "$1/file" "$1/shown" 2>/dev/null; true`, "sh", base}})
	if strings.Join(o.Stdout, ",") != "public" {
		t.Fatalf("hidden paths readable: %q", o.Stdout)
	}
}

// network = "none" blocks a connection to a host loopback listener that
// the default network reaches.
func TestNetworkNoneBlocksConnections(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
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
	probe := sdk.ExecRequest{Argv: []string{"bash", "-c", fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && head -n1 <&3`, ln.Addr().(*net.TCPAddr).Port)}, Timeout: 20 * time.Second}
	open, _ := create(t, cfgOf(nil), nil)
	res, o := kittest.Exec(t, open, probe)
	if res.ExitCode != 0 || strings.Join(o.Stdout, ",") != "hello" {
		t.Fatalf("default network cannot reach the listener (test is void): %+v %q %q", res, o.Stdout, o.Stderr)
	}
	closed, _ := create(t, cfgOf(map[string]cty.Value{"network": cty.StringVal("none")}), nil)
	res, o = kittest.Exec(t, closed, probe)
	if res.ExitCode == 0 || len(o.Stdout) > 0 {
		t.Fatalf(`network "none" reached the host listener: %+v %q`, res, o.Stdout)
	}
}

// markedProcesses lists host processes whose environment holds marker.
func markedProcesses(marker string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var found []string
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(b, []byte{0}) {
			if string(kv) == marker {
				cmd, _ := os.ReadFile(filepath.Join(d, "cmdline"))
				found = append(found, filepath.Base(d)+":"+string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
			}
		}
	}
	return found
}

// Cancellation, timeouts and Close leave no process of the command on the
// host, including a detached grandchild and one that ignores SIGTERM.
func TestKillLeavesNoProcess(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	sb, _ := create(t, cfgOf(nil), nil)
	for _, mode := range []string{"cancel", "timeout", "close"} {
		t.Run(mode, func(t *testing.T) {
			target := sb
			if mode == "close" {
				target, _ = create(t, cfgOf(nil), nil)
			}
			marker := "SANDDUNE_TEST_MARK=" + randomHex()
			k, v, _ := strings.Cut(marker, "=")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req := sdk.ExecRequest{Shell: `setsid sleep 1001 & (trap '' TERM; sleep 1002) & echo ready; wait`, Env: map[string]string{k: v}}
			if mode == "timeout" {
				req.Timeout = 2 * time.Second
			}
			var once sync.Once
			closed := make(chan error, 1)
			res, err := target.Exec(ctx, req, func(l sdk.OutputLine) {
				if string(l.Text) != "ready" {
					return
				}
				switch mode {
				case "cancel":
					once.Do(cancel)
				case "close":
					once.Do(func() { go func() { closed <- target.Close(context.Background()) }() })
				}
			})
			switch mode {
			case "cancel":
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("cancel: %+v %v", res, err)
				}
			case "timeout":
				if err != nil || !res.TimedOut {
					t.Fatalf("timeout: %+v %v", res, err)
				}
			case "close":
				if err := <-closed; err != nil {
					t.Fatalf("Close: %v", err)
				}
			}
			// The kernel tears the PID namespace down asynchronously.
			var left []string
			for i := 0; i < 50; i++ {
				if left = markedProcesses(marker); len(left) == 0 {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if len(left) > 0 {
				t.Fatalf("processes left: %q", left)
			}
			if mode == "close" {
				if _, err := os.Stat(target.dir); !os.IsNotExist(err) {
					t.Fatalf("sandbox dir left after Close: %v", err)
				}
			}
		})
	}
}

// A commit in a real worktree lands on its branch when the git metadata is
// mounted, and fails when it is not (the host repo is read-only).
func TestGitCommitInWorktree(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	// Outside /tmp, so that the repo is visible (read-only) through the host root.
	base, err := os.MkdirTemp("/var/tmp", "sanddune-git-")
	must(t, err)
	defer os.RemoveAll(base)
	w := kittest.NewWorktree(t, base)
	commit := sdk.ExecRequest{Shell: `echo change >> agent.txt && git add agent.txt && git -c user.name=Agent -c user.email=a@example.invalid commit -q -m "agent commit"`}

	without, _ := create(t, cfgOf(nil), func(r *sdk.CreateRequest) { r.HostRepoPath, r.WorktreePath = w.Repo, w.Path })
	if res, _ := kittest.Exec(t, without, commit); res.ExitCode == 0 {
		t.Fatal("commit succeeded without git mounts: the host .git is writable")
	}
	with, _ := create(t, cfgOf(nil), func(r *sdk.CreateRequest) {
		r.HostRepoPath, r.WorktreePath = w.Repo, w.Path
		r.GitMounts = w.GitMounts
	})
	if res, o := kittest.Exec(t, with, commit); res.ExitCode != 0 {
		t.Fatalf("commit with git mounts: %+v %q", res, o.Stderr)
	}
	if got := kittest.Git(t, w.Repo, "log", "-1", "--format=%s", w.Branch); got != "agent commit" {
		t.Fatalf("branch head: %q", got)
	}
}

func TestCopyConfinement(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	sb, req := create(t, cfgOf(nil), nil)
	src := filepath.Join(t.TempDir(), "f")
	must(t, os.WriteFile(src, []byte("x\n"), 0o644))
	ctx := context.Background()
	must(t, sb.CopyIn(ctx, src, "/tmp/deep/f"))
	must(t, sb.CopyIn(ctx, src, sb.home+"/g"))
	_, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: `cat /tmp/deep/f "$HOME/g"`})
	if strings.Join(o.Stdout, ",") != "x,x" {
		t.Fatalf("got %q", o.Stdout)
	}
	out := filepath.Join(t.TempDir(), "o")
	must(t, sb.CopyOut(ctx, "/tmp/deep", out))
	if b, err := os.ReadFile(filepath.Join(out, "f")); err != nil || string(b) != "x\n" {
		t.Fatalf("copy out of /tmp: %q %v", b, err)
	}
	for _, bad := range []string{"/etc/f", "../f", "/usr/f"} {
		if err := sb.CopyIn(ctx, src, bad); err == nil {
			t.Errorf("CopyIn to %s accepted", bad)
		}
	}
	// A symlink to outside the sandbox is never written through.
	outside := t.TempDir()
	must(t, os.Symlink(outside, filepath.Join(req.WorktreePath, "link")))
	if err := sb.CopyIn(ctx, src, "link/f"); err == nil {
		t.Error("CopyIn through a symlink to outside accepted")
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Error("file written outside the sandbox")
	}
}

func TestResources(t *testing.T) {
	t.Parallel()
	requireBwrap(t)
	sb, req := create(t, cfgOf(nil), nil)
	p := New().(*Provider)
	rs, err := p.ListResources(context.Background(), sdk.Config{})
	must(t, err)
	found := false
	for _, r := range rs {
		found = found || (r.ID == sb.dir && r.Labels[sdk.LabelRun] == req.RunID)
	}
	if !found {
		t.Fatalf("ListResources misses %s: %+v", sb.dir, rs)
	}
	if err := p.RemoveResource(context.Background(), sdk.Config{}, "/etc"); err == nil {
		t.Fatal("RemoveResource accepted /etc")
	}
	must(t, p.RemoveResource(context.Background(), sdk.Config{}, sb.dir))
	if _, err := os.Stat(sb.dir); !os.IsNotExist(err) {
		t.Fatalf("dir left: %v", err)
	}
	must(t, p.RemoveResource(context.Background(), sdk.Config{}, sb.dir))
}

func TestPreflightWithoutBwrap(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := New().Preflight(context.Background(), sdk.PreflightRequest{HostRepoPath: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Fatalf("got %v", err)
	}
}
