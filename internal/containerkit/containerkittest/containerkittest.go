// Package containerkittest holds the tests every container-engine sandbox
// provider built on containerkit runs against its real engine, on top of
// the sandboxtest conformance suite: the shared block's diagnostics, exec
// as the container user in the fixed layout, file ownership, the agent
// home left as a fitting image has it (Home), cancellation killing the
// whole process tree inside, network "none", copies, git in a worktree,
// and removal. Call them from the engine's own tests:
//
//	func TestCancelKillsProcessTree(t *testing.T) { containerkittest.CancelKillsProcessTree(t, engine) }
package containerkittest

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
	"syscall"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/containerkit"
	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/sdk"
)

// Engine is what the tests need of one engine.
type Engine struct {
	// Name is the engine's command ("docker"), as in containerkit.Engine.
	Name string
	// New returns a fresh provider.
	New func() sdk.SandboxProvider
	// Config is a provider block that runs on this machine (the test
	// image, the settings this host needs), then attrs. It skips the test,
	// or fails it under SANDDUNE_REQUIRE_ENGINES=1, when the engine or the
	// test image is missing.
	Config func(t *testing.T, attrs map[string]cty.Value) sdk.Config
	// Processes lists the commands running in a container.
	Processes func(t *testing.T, id string) []string
	// Containers lists the containers labelled with a run id.
	Containers func(t *testing.T, runID string) []string
	// Parallel runs the tests with t.Parallel.
	Parallel bool
}

func (e Engine) start(t *testing.T) {
	if e.Parallel {
		t.Parallel()
	}
}

// Image is the image the engine tests run: scripts/test-image.sh builds
// it (debootstrap minbase + git) into docker and imports it into podman;
// SANDDUNE_TEST_IMAGE names another.
func Image() string {
	if s := os.Getenv("SANDDUNE_TEST_IMAGE"); s != "" {
		return s
	}
	return "sanddune-test-base:bookworm"
}

// RequireEngine stops the test when the engine or the test image is
// unavailable (err): it fails under SANDDUNE_REQUIRE_ENGINES=1 and is
// skipped, loudly, otherwise.
func RequireEngine(t *testing.T, name string, err error) {
	t.Helper()
	if err != nil {
		err = fmt.Errorf("%w (run scripts/ci-setup.sh as root)", err)
	}
	kittest.RequireEngine(t, name, err)
}

// RunID is a fresh run id for a test.
func RunID() string { return "test-" + containerkit.RandomHex(6) }

// Create makes a sandbox over a plain directory worktree as the host user,
// labelled as a run's, closed at cleanup; mod changes the request first.
func Create(t *testing.T, e Engine, cfg sdk.Config, mod func(*sdk.CreateRequest)) (sdk.Sandbox, sdk.CreateRequest) {
	t.Helper()
	return createWith(t, e.New(), e, cfg, mod)
}

// createWith is Create with provider p.
func createWith(t *testing.T, p sdk.SandboxProvider, e Engine, cfg sdk.Config, mod func(*sdk.CreateRequest)) (sdk.Sandbox, sdk.CreateRequest) {
	t.Helper()
	wt := t.TempDir()
	req := sdk.CreateRequest{
		Config:       cfg,
		RunID:        RunID(),
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
	req.Labels = map[string]string{sdk.LabelRun: req.RunID, sdk.LabelSandbox: "sandbox." + e.Name + ".test"}
	sb, err := p.Create(context.Background(), req)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() {
		if err := sb.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return sb, req
}

// DiagnosticCase is a block (over the engine's base attributes) and the
// attribute its first error must name.
type DiagnosticCase struct {
	Attrs map[string]cty.Value
	Want  string
}

// GoodAttrs sets every shared attribute to a valid value.
func GoodAttrs() map[string]cty.Value {
	return map[string]cty.Value{
		"env":        cty.MapVal(map[string]cty.Value{"A": cty.StringVal("1")}),
		"network":    cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
		"cpus":       cty.NumberFloatVal(1.5),
		"memory":     cty.StringVal("512m"),
		"pids_limit": cty.NumberIntVal(100),
		"devices":    cty.ListVal([]cty.Value{cty.StringVal("/dev/kvm"), cty.StringVal("/dev/a:/dev/b:rw")}),
		"mount": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"host_path": cty.StringVal("~/.npm"), "sandbox_path": cty.StringVal("~/.npm"), "readonly": cty.True,
		})}),
	}
}

// CheckGood checks the shared half of GoodAttrs decoded.
func CheckGood(t *testing.T, c containerkit.Config) {
	t.Helper()
	if c.Memory != 512<<20 || c.CPUs != 1.5 || len(c.Networks) != 2 || c.Mounts[0].SandboxPath != "/home/agent/.npm" ||
		c.Devices[1] != (containerkit.Device{HostPath: "/dev/a", ContainerPath: "/dev/b", Permissions: "rw"}) {
		t.Fatalf("decoded %+v", c)
	}
}

// Diagnostics configures p with block(attrs) for the shared attributes'
// mistakes, then own's: each must be an error on the attribute named.
func Diagnostics(t *testing.T, p sdk.Provider, block func(map[string]cty.Value) sdk.Config, own ...DiagnosticCase) {
	t.Helper()
	for _, tc := range append([]DiagnosticCase{
		{map[string]cty.Value{"memory": cty.StringVal("lots")}, "memory"},
		{map[string]cty.Value{"memory": cty.StringVal("1k")}, "memory"},
		{map[string]cty.Value{"cpus": cty.NumberIntVal(0)}, "cpus"},
		{map[string]cty.Value{"pids_limit": cty.NumberFloatVal(1.5)}, "pids_limit"},
		{map[string]cty.Value{"network": cty.TupleVal([]cty.Value{cty.StringVal("none"), cty.StringVal("x")})}, "network"},
		{map[string]cty.Value{"network": cty.NumberIntVal(3)}, "network"},
		{map[string]cty.Value{"devices": cty.ListVal([]cty.Value{cty.StringVal("kvm")})}, "devices.0"},
		{map[string]cty.Value{"selinux_label": cty.StringVal("y")}, "selinux_label"},
		{map[string]cty.Value{"selinux_label": cty.True}, "selinux_label"},
		{map[string]cty.Value{"image": cty.StringVal("two words")}, "image"},
		{map[string]cty.Value{"mount": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"host_path": cty.StringVal("x"), "sandbox_path": cty.StringVal("../up"), "readonly": cty.False,
		})})}, "mount.0.sandbox_path"},
	}, own...) {
		diags, _ := p.Configure(context.Background(), block(tc.Attrs))
		if !diags.HasErrors() || diags[0].Attribute != tc.Want {
			t.Errorf("%v: want an error on %s, got %#v", tc.Attrs, tc.Want, diags)
		}
	}
}

// Exec runs commands the way agents do: the block's env layered in by the
// host, output and exit codes, stdin, the workspace as the working
// directory and its confinement, the host UID, HOME, long lines.
func Exec(t *testing.T, e Engine) {
	e.start(t)
	// The block's env reaches commands the way the host passes it: Describe
	// gives it, the host layers it into CreateRequest.Env.
	cfg := e.Config(t, map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"FROM_CFG": cty.StringVal("cfg")})})
	desc, err := e.New().Describe(context.Background(), cfg)
	if err != nil || desc.Env["FROM_CFG"] != "cfg" {
		t.Fatalf("Describe = %+v, %v; want the block's env", desc, err)
	}
	sb, _ := Create(t, e, cfg, func(r *sdk.CreateRequest) { maps.Copy(r.Env, desc.Env) })
	if info := sb.Info(); info.RepoPath != containerkit.WorkspaceDir || info.HomePath != containerkit.HomeDir || info.ID == "" {
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
	kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"mkdir", "-p", "sub/dir"}})
	_, o = kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"pwd"}, Cwd: "sub/dir"})
	if len(o.Stdout) == 0 || o.Stdout[0] != "/home/agent/workspace/sub/dir" {
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
	_, o = kittest.Exec(t, sb, sdk.ExecRequest{Shell: fmt.Sprintf("head -c %d /dev/zero | tr '\\0' a; echo; echo end", sdk.MaxLineBytes*2+10)})
	partial := 0
	for _, p := range o.Pieces {
		if p.Partial {
			partial++
		}
	}
	if partial != 2 || o.Stdout[len(o.Stdout)-1] != "end" || len(o.Stdout[2]) != 10 {
		t.Fatalf("long line: %d partial, %d lines", partial, len(o.Stdout))
	}
}

// Ownership checks that a file the agent writes in the worktree belongs to
// the user the container runs as (uid), as does the home directory
// (uid:gid), for a request as host user 1000:1001 under attrs; sudo is root.
func Ownership(t *testing.T, e Engine, attrs map[string]cty.Value, uid, gid int) {
	t.Helper()
	sb, req := Create(t, e, e.Config(t, attrs), func(r *sdk.CreateRequest) { r.HostUID, r.HostGID = 1000, 1001 })
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
	if got := OwnerUID(fi); got != uid {
		t.Fatalf("agent.txt owned by %d, want %d", got, uid)
	}
	if want := fmt.Sprintf("%d:%d", uid, gid); o.Stdout[0] != want {
		t.Fatalf("home owned by %q, want %s", o.Stdout[0], want)
	}
	_, o = kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"id", "-u"}})
	_, so := kittest.Exec(t, sb, sdk.ExecRequest{Argv: []string{"id", "-u"}, Sudo: true})
	if o.Stdout[0] != fmt.Sprint(uid) || so.Stdout[0] != "0" {
		t.Fatalf("id -u: %q, sudo: %q", o.Stdout, so.Stdout)
	}
}

// ResourceLimits creates a container with cpus, memory and pids_limit set,
// checks that the pids limit holds inside (the cgroup says so) and that
// the container carries the run's label, and returns it for the engine to
// inspect the limits it recorded.
func ResourceLimits(t *testing.T, e Engine) sdk.Sandbox {
	t.Helper()
	sb, req := Create(t, e, e.Config(t, map[string]cty.Value{
		"cpus":       cty.NumberFloatVal(0.5),
		"memory":     cty.StringVal("256m"),
		"pids_limit": cty.NumberIntVal(64),
	}), nil)
	_, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: `cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max`})
	if len(o.Stdout) == 0 || o.Stdout[0] != "64" {
		t.Fatalf("pids.max inside: %q %q", o.Stdout, o.Stderr)
	}
	if got := e.Containers(t, req.RunID); len(got) != 1 {
		t.Fatalf("containers labelled with the run: %v", got)
	}
	return sb
}

// NetworkNone checks that network = "none" blocks a connection to a
// listener on the default network's gateway (the host), which the default
// network reaches.
func NetworkNone(t *testing.T, e Engine) {
	e.start(t)
	open, _ := Create(t, e, e.Config(t, nil), nil)
	gw := gateway(t, open)
	port := kittest.HelloListener(t, gw)
	probe := sdk.ExecRequest{Argv: []string{"bash", "-c", fmt.Sprintf(`exec 3<>/dev/tcp/%s/%d && head -n1 <&3`, gw, port)}, Timeout: 20 * time.Second}
	res, o := kittest.Exec(t, open, probe)
	if res.ExitCode != 0 || len(o.Stdout) == 0 || o.Stdout[0] != "hello" {
		t.Fatalf("default network cannot reach the listener (test is void): %+v %q %q", res, o.Stdout, o.Stderr)
	}
	closed, _ := Create(t, e, e.Config(t, map[string]cty.Value{"network": cty.StringVal("none")}), nil)
	res, o = kittest.Exec(t, closed, probe)
	if res.ExitCode == 0 || len(o.Stdout) > 0 {
		t.Fatalf(`network "none" reached the host listener: %+v %q`, res, o.Stdout)
	}
}

// gateway is the default route's gateway inside a container.
func gateway(t *testing.T, sb sdk.Sandbox) string {
	t.Helper()
	_, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: `ip route 2>/dev/null | awk '/default/ {print $3}' || true; awk 'NR>1 && $2=="00000000" {print $3}' /proc/net/route`})
	for _, l := range o.Stdout {
		if ip := net.ParseIP(l); ip != nil {
			return l
		}
		if len(l) == 8 { // little-endian hex from /proc/net/route
			var b [4]byte
			if _, err := fmt.Sscanf(l, "%02x%02x%02x%02x", &b[3], &b[2], &b[1], &b[0]); err == nil {
				return net.IPv4(b[0], b[1], b[2], b[3]).String()
			}
		}
	}
	t.Fatalf("no default gateway in the container: %q", o.Stdout)
	return ""
}

// CancelKillsProcessTree checks that cancellation, a timeout and a
// cancelled sudo exec kill every process the command started inside,
// detached and TERM-ignoring ones included.
func CancelKillsProcessTree(t *testing.T, e Engine) {
	e.start(t)
	sb, _ := Create(t, e, e.Config(t, nil), nil)
	id := sb.Info().ID
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
			if left := planted(e.Processes(t, id)); len(left) > 0 {
				t.Fatalf("processes of the exec left: %q", left)
			}
		})
	}
}

// planted lists the commands of ps that the exec of CancelKillsProcessTree
// started (its shell and its sleeps 1001 and 1002). Only those count: the
// container's own processes may still be starting when the test begins
// (docker-init forks the command a moment after it shows).
func planted(ps []string) []string {
	var out []string
	for _, p := range ps {
		if strings.Contains(p, "sleep 100") {
			out = append(out, p)
		}
	}
	return out
}

// CloseRemovesContainer checks that ListResources lists a run's container,
// Close removes it (twice is fine), an exec after Close fails, and
// RemoveResource of a gone container succeeds.
func CloseRemovesContainer(t *testing.T, e Engine) {
	e.start(t)
	sb, req := Create(t, e, e.Config(t, nil), nil)
	id := sb.Info().ID
	p := e.New().(sdk.ResourceLister)
	rs, err := p.ListResources(context.Background(), sdk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range rs {
		found = found || (r.ID == id && r.Labels[sdk.LabelRun] == req.RunID)
	}
	if !found {
		t.Fatalf("ListResources does not list %s: %+v", id, rs)
	}
	for i := 0; i < 2; i++ {
		if err := sb.Close(context.Background()); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	if left := e.Containers(t, req.RunID); len(left) != 0 {
		t.Fatalf("containers left: %v", left)
	}
	if _, err := sb.Exec(context.Background(), sdk.ExecRequest{Argv: []string{"true"}}, func(sdk.OutputLine) {}); err == nil {
		t.Fatal("Exec after Close succeeded")
	}
	if err := p.RemoveResource(context.Background(), sdk.Config{}, id); err != nil {
		t.Fatalf("RemoveResource of a gone container: %v", err)
	}
}

// CopyInOut copies a tree (a nested file, an executable, a symlink) in to
// a new place and into the workspace, owned by the container user, and
// back out; missing sources and paths outside the sandbox fail.
func CopyInOut(t *testing.T, e Engine) {
	e.start(t)
	sb, req := Create(t, e, e.Config(t, nil), func(r *sdk.CreateRequest) { r.HostUID, r.HostGID = 1000, 1000 })
	src := t.TempDir()
	kittest.WriteFile(t, filepath.Join(src, "d", "e", "f.txt"), "deep", 0o644)
	kittest.WriteFile(t, filepath.Join(src, "x.sh"), "#!/bin/sh\necho x\n", 0o755)
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
	kittest.CheckFile(t, filepath.Join(dst, "d", "e", "f.txt"), "deep", 0o644)
	if l, err := os.Readlink(filepath.Join(dst, "link")); err != nil || l != "x.sh" {
		t.Fatalf("symlink: %q %v", l, err)
	}
	must(t, sb.CopyOut(ctx, "rel/x.sh", filepath.Join(dst, "single")))
	kittest.CheckFile(t, filepath.Join(dst, "single"), "#!/bin/sh\necho x\n", 0o755)
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

// GitCommitInWorktree checks that a commit made inside the container on a
// real worktree lands on the worktree's branch in the host repo, with only
// the git metadata mounted, and that the agent cannot write the repo's
// git config.
func GitCommitInWorktree(t *testing.T, e Engine) {
	e.start(t)
	w := kittest.NewWorktree(t, t.TempDir())
	sb, _ := Create(t, e, e.Config(t, nil), func(r *sdk.CreateRequest) {
		r.HostRepoPath, r.WorktreePath, r.GitMounts = w.Repo, w.Path, w.GitMounts
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

// PreflightCase is a block (over the engine's test block) and a part of
// the error preflight must report for it.
type PreflightCase struct {
	Attrs map[string]cty.Value
	Want  string
}

// Preflight checks that preflight passes with the test block and fails,
// saying what to do, for the shared mistakes and own's.
func Preflight(t *testing.T, e Engine, own map[string]PreflightCase) {
	e.start(t)
	p := e.New()
	ctx := context.Background()
	req := sdk.PreflightRequest{Config: e.Config(t, nil), HostRepoPath: t.TempDir(), HostUID: os.Getuid(), HostGID: os.Getgid()}
	if err := p.Preflight(ctx, req); err != nil {
		t.Fatalf("preflight with the test image: %v", err)
	}
	cases := map[string]PreflightCase{
		"no image":     {map[string]cty.Value{"image": cty.StringVal("sanddune-no-such-image:x")}, "sanddune " + e.Name + " build-image --image-name sanddune-no-such-image:x"},
		"default name": {map[string]cty.Value{"image": cty.NullVal(cty.String)}, "sanddune " + e.Name + " build-image`"},
		"no network":   {map[string]cty.Value{"network": cty.StringVal("sanddune-no-such-net")}, e.Name + " network create"},
		"bad config":   {map[string]cty.Value{"memory": cty.StringVal("huge")}, "memory"},
		"mount": {map[string]cty.Value{"mount": cty.ListVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"host_path": cty.StringVal("does-not-exist"), "sandbox_path": cty.StringVal("/x"), "readonly": cty.True,
		})})}, "does not exist"},
	}
	maps.Copy(cases, own)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e.start(t)
			req := req
			req.Config = e.Config(t, tc.Attrs)
			err := p.Preflight(ctx, req)
			if err == nil || !strings.Contains(err.Error(), tc.Want) {
				t.Errorf("got %v, want an error mentioning %q", err, tc.Want)
			}
		})
	}
}

// BuildImageCase is how an engine's image commands are tested.
type BuildImageCase struct {
	File     string   // the build file build-image reads in .sanddune ("Dockerfile")
	Progress string   // a word of the build output streamed ("Step")
	Args     []string // build-image flags this host needs (its runtime)
	Mismatch string   // the fix a UID mismatch suggests beyond a rebuild, if any
	// DefaultName builds under the repo's default image name (unique per
	// engine) instead of a fresh --image-name.
	DefaultName bool
}

// BuildRepo is a repo named "Build Repo" whose .sanddune holds file (built
// from the test image for AGENT_UID:AGENT_GID, recording the UID and
// copying its context), a secret .env, a prompt and a worktree.
func BuildRepo(t *testing.T, file string) string {
	repo := filepath.Join(t.TempDir(), "Build Repo")
	must(t, os.MkdirAll(filepath.Join(repo, ".sanddune", "worktrees", "big"), 0o755))
	kittest.WriteFile(t, filepath.Join(repo, ".sanddune", file), fmt.Sprintf(
		"FROM %s\nARG AGENT_UID=1000\nARG AGENT_GID=1000\nCOPY . /ctx/\nRUN echo $AGENT_UID > /built-for\nUSER ${AGENT_UID}:${AGENT_GID}\n", Image()), 0o644)
	kittest.WriteFile(t, filepath.Join(repo, ".sanddune", ".env"), "SECRET=1\n", 0o644)
	kittest.WriteFile(t, filepath.Join(repo, ".sanddune", "prompt.md"), "p\n", 0o644)
	return repo
}

// BuildImage checks that build-image builds .sanddune's build file with the
// host UID/GID and without secrets or worktrees in the context, streaming
// its progress; that preflight then accepts the image for that UID and
// rejects another; that remove-image removes it (and says when it is
// gone); and that bad flags and a missing build file are refused.
func BuildImage(t *testing.T, e Engine, c BuildImageCase) {
	e.start(t)
	p := e.New().(sdk.CommandProvider)
	ctx := context.Background()
	repo := BuildRepo(t, c.File)
	image, imageAttr := "sanddune:build-repo", cty.NullVal(cty.String)
	var args []string
	if !c.DefaultName {
		image = "sanddune:build-repo-" + containerkit.RandomHex(3)
		imageAttr, args = cty.StringVal(image), []string{"--image-name", image}
	}
	var lines []string
	code, err := p.RunCommand(ctx, sdk.RunCommandRequest{Name: "build-image", Args: append(args, c.Args...), Cwd: repo, HostRepoPath: repo, HostUID: 4321, HostGID: 4321},
		func(l sdk.OutputLine) { lines = append(lines, string(l.Text)) })
	if err != nil || code != 0 {
		t.Fatalf("build-image: %d %v\n%s", code, err, strings.Join(lines, "\n"))
	}
	remove := sdk.RunCommandRequest{Name: "remove-image", Args: []string{"--image-name", image}}
	t.Cleanup(func() { _, _ = p.RunCommand(ctx, remove, func(sdk.OutputLine) {}) })
	if !strings.Contains(strings.Join(lines, "\n"), c.Progress) {
		t.Errorf("no build progress streamed: %q", lines)
	}
	cfg := e.Config(t, map[string]cty.Value{"image": imageAttr})
	if err := e.New().Preflight(ctx, sdk.PreflightRequest{Config: cfg, HostRepoPath: repo, HostUID: 4321, HostGID: 4321}); err != nil {
		t.Fatalf("preflight after build-image: %v", err)
	}
	err = e.New().Preflight(ctx, sdk.PreflightRequest{Config: cfg, HostRepoPath: repo, HostUID: 1000, HostGID: 1000})
	if err == nil || !strings.Contains(err.Error(), "UID mismatch") || !strings.Contains(err.Error(), c.Mismatch) {
		t.Fatalf("UID mismatch not caught: %v", err)
	}
	// Built for the UID; the context left out .env and worktrees.
	sb, _ := Create(t, e, cfg, func(r *sdk.CreateRequest) { r.HostRepoPath, r.HostUID, r.HostGID = repo, 4321, 4321 })
	_, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: "cat /built-for; ls -A /ctx"})
	if got, want := strings.Join(o.Stdout, " "), "4321 "+c.File+" prompt.md"; got != want {
		t.Fatalf("build context: %q, want %q", got, want)
	}
	must(t, sb.Close(ctx))

	if code, err := p.RunCommand(ctx, remove, func(sdk.OutputLine) {}); err != nil || code != 0 {
		t.Fatalf("remove-image: %d %v", code, err)
	}
	if err := e.New().Preflight(ctx, sdk.PreflightRequest{Config: cfg, HostRepoPath: repo, HostUID: 4321, HostGID: 4321}); err == nil {
		t.Fatal("image still there after remove-image")
	}
	if code, err := p.RunCommand(ctx, remove, func(sdk.OutputLine) {}); code != 1 || err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("remove a missing image: %d %v", code, err)
	}
	if code, err := p.RunCommand(ctx, sdk.RunCommandRequest{Name: "build-image", Args: []string{"--bogus"}}, func(sdk.OutputLine) {}); code != 2 || !errors.Is(err, sdk.ErrUsage) {
		t.Fatalf("bad flag: %d %v", code, err)
	}
	if code, err := p.RunCommand(ctx, sdk.RunCommandRequest{Name: "build-image", Cwd: t.TempDir()}, func(sdk.OutputLine) {}); code != 1 || err == nil || !strings.Contains(err.Error(), "sanddune init") {
		t.Fatalf("missing %s: %d %v", c.File, code, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// OwnerUID is the UID owning a host file.
func OwnerUID(fi os.FileInfo) int { return int(fi.Sys().(*syscall.Stat_t).Uid) }
