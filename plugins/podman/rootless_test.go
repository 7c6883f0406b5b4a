package podman

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/missingstudio/sanddune/internal/containerkit/containerkittest"
	"github.com/missingstudio/sanddune/internal/kittest"
	"github.com/missingstudio/sanddune/sdk"
	"github.com/missingstudio/sanddune/sdk/sandboxtest"
)

// rootlessUser is the test user scripts/ci-setup.sh creates, with
// subordinate id ranges and the test image in its own podman storage.
const rootlessUser = "sanddune-rootless"

// rootlessChild marks the test binary re-run as the rootless user.
const rootlessChild = "SANDDUNE_PODMAN_ROOTLESS_CHILD"

// Rootless podman: as root, the test re-runs itself as the rootless test
// user; that child (or a test run by a non-root user) checks that the agent's
// files in the worktree belong to the host user under the default
// userns = "keep-id", also through its own podman service (and to a
// subordinate id without keep-id), and beside those checks runs the
// conformance suite. The containers use network = "none": on this machine
// kind /dev/net/tun is root-only (0600), so rootless networking
// (slirp4netns) cannot start.
func TestRootless(t *testing.T) {
	t.Parallel()
	if os.Getenv(rootlessChild) == "1" || os.Geteuid() != 0 {
		rootlessChecks(t)
		return
	}
	u, err := user.Lookup(rootlessUser)
	if err != nil {
		kittest.RequireEngine(t, "podman rootless", fmt.Errorf("no user %s with subordinate ids (scripts/ci-setup.sh creates it): %w", rootlessUser, err))
	}
	requirePodman(t)
	if _, err := exec.LookPath("runuser"); err != nil {
		kittest.RequireEngine(t, "podman rootless", err)
	}
	// The test binary, where the rootless user can run it.
	dir, err := os.MkdirTemp("", "sanddune-rootless-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "podman.test")
	must(t, copyFile(os.Args[0], bin))
	runtimeDir := "/run/user/" + u.Uid
	cmd := exec.Command("runuser", "-u", rootlessUser, "--", "env", "-i",
		"HOME="+u.HomeDir, "XDG_RUNTIME_DIR="+runtimeDir, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
		rootlessChild+"=1", kittest.RequireEnginesEnv+"="+os.Getenv(kittest.RequireEnginesEnv),
		"SANDDUNE_TEST_IMAGE="+testImage(),
		bin, "-test.run", "^TestRootless$", "-test.v", "-test.count=1")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	t.Logf("as %s:\n%s", rootlessUser, out)
	if err != nil {
		t.Fatalf("the rootless run failed: %v", err)
	}
	if strings.Contains(string(out), "--- SKIP: TestRootless (") {
		kittest.RequireEngine(t, "podman rootless", fmt.Errorf("the rootless run skipped (output above)"))
	}
}

func rootlessChecks(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Fatal("not rootless")
	}
	if err := rootlessPrerequisites(); len(err) > 0 {
		kittest.RequireEngine(t, "podman rootless", fmt.Errorf("%v", err))
	}
	none := map[string]cty.Value{"network": cty.StringVal("none")}
	// The owner checks and the kit side by side: containers of their own.
	t.Run("Owner", func(t *testing.T) {
		t.Parallel()
		rootlessOwner(t, none)
	})
	t.Run("Conformance", func(t *testing.T) {
		t.Parallel()
		sandboxtest.Run(t, New(), sandboxtest.Options{Config: cfgOf(t, none).Value})
	})
}

// rootlessOwner checks who owns the files the agent writes in the
// worktree: the host user with keep-id (the default, also through a
// podman service), a subordinate id without it; and so which host
// directories the plugin mounts for the host.
func rootlessOwner(t *testing.T, none map[string]cty.Value) {
	wt := t.TempDir()
	// Writable for a subordinate id too, so that the check without keep-id
	// shows who owns the file rather than failing to write it.
	must(t, os.Chmod(wt, 0o777))
	write := func(attrs map[string]cty.Value, file string) int {
		sb, _ := create(t, cfgOf(t, attrs), func(r *sdk.CreateRequest) { r.HostRepoPath, r.WorktreePath = wt, wt })
		if res, o := kittest.Exec(t, sb, sdk.ExecRequest{Shell: "echo hi > " + file + " && touch $HOME/ok"}); res.ExitCode != 0 {
			t.Fatalf("write %s: %+v %q", file, res, o.Stderr)
		}
		fi, err := os.Stat(filepath.Join(wt, file))
		must(t, err)
		return containerkittest.OwnerUID(fi)
	}
	if uid := write(none, "keep-id.txt"); uid != os.Getuid() {
		t.Fatalf("with userns = keep-id (the default) the agent's file belongs to %d, want the host user %d", uid, os.Getuid())
	}
	// Through the user's own podman service, keep-id is the default too:
	// the service says it is rootless.
	viaService := map[string]cty.Value{"network": cty.StringVal("none"), "socket": cty.StringVal(startService(t, t.TempDir(), requirePodman(t))),
		"runtime": cty.NullVal(cty.String), "cgroup_manager": cty.NullVal(cty.String)}
	if uid := write(viaService, "service-keep-id.txt"); uid != os.Getuid() {
		t.Fatalf("through a rootless podman service the agent's file belongs to %d, want the host user %d", uid, os.Getuid())
	}
	noKeep := map[string]cty.Value{"network": cty.StringVal("none"), "userns": cty.StringVal("")}
	if uid := write(noKeep, "no-keep-id.txt"); uid == os.Getuid() {
		t.Fatalf("without keep-id the file belongs to the host user too: the keep-id check is void")
	}
	// A host directory the host asks to mount is in place with keep-id
	// (the container's user is the host's), left out without it (a
	// subordinate id the plugin cannot give the directory to).
	mounts := func(attrs map[string]cty.Value) []sdk.Mount {
		dir := t.TempDir()
		sb, _ := create(t, cfgOf(t, attrs), func(r *sdk.CreateRequest) { r.Mounts = []sdk.Mount{{HostPath: dir, SandboxPath: "~/.m"}} })
		return sb.Info().Mounts
	}
	if keep, noKeep := mounts(none), mounts(noKeep); len(keep) != 1 || len(noKeep) != 0 {
		t.Errorf("mounts in place: %+v with keep-id, %+v without; want one, none", keep, noKeep)
	}
	// The default network needs /dev/net/tun: where rootless networking
	// cannot start, preflight says so.
	if fi, err := os.Stat("/dev/net/tun"); err == nil && fi.Mode().Perm()&0o006 == 0 {
		err := New().Preflight(context.Background(), sdk.PreflightRequest{Config: cfgOf(t, nil), HostRepoPath: wt, HostUID: os.Getuid(), HostGID: os.Getgid()})
		if err == nil || !strings.Contains(err.Error(), "/dev/net/tun") {
			t.Errorf("preflight with the default network, /dev/net/tun root-only: %v", err)
		}
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
