package bubblewrap

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/missingstudio/sanddune/internal/kittest"
)

// unprivilegedTests are the tests TestUnprivileged runs again as an
// ordinary user.
const unprivilegedTests = "^(TestConformance|TestEgressPolicyEnforced|TestEgressKeepsTheUser)$"

// TestUnprivileged runs the conformance kit and the egress tests again as
// an ordinary user (nobody, 65534:65534), the way most people run
// bubblewrap: unprivileged bwrap nests user namespaces, so namespaces,
// file ownership and egress enforcement all take another path than as
// root. Run as root (as in CI), the test binary starts itself as that
// user; run as another user, every test here is unprivileged already.
func TestUnprivileged(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skipf("the tests run as uid %d: unprivileged already", os.Geteuid())
	}
	requireBwrap(t)
	cred := &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}
	dir := userDir(t, cred)
	requireUnprivilegedBwrap(t, cred, dir)

	// /proc/self/exe reaches this binary past the build directory, which
	// only root may enter.
	cmd := exec.CommandContext(t.Context(), "/proc/self/exe", "-test.run", unprivilegedTests, "-test.v", "-test.count", "1")
	cmd.Dir = dir
	// The user's own home and temp directory; every skip a failure (bwrap
	// was just shown to work for this user).
	cmd.Env = append(os.Environ(), "HOME="+dir, "TMPDIR="+dir, kittest.RequireEnginesEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the tests as uid %d: %v\n%s", cred.Uid, err, out)
	}
	for _, name := range strings.Split(strings.Trim(unprivilegedTests, "^()$"), "|") {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Errorf("%s did not pass as uid %d:\n%s", name, cred.Uid, out)
		}
	}
}

// userDir is a directory the user owns, removed when the test ends.
func userDir(t *testing.T, cred *syscall.Credential) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sanddune-bwrap-user-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chown(dir, int(cred.Uid), int(cred.Gid)))
	return dir
}

// requireUnprivilegedBwrap stops the test when bwrap cannot make a
// sandbox as the user: skipped, loudly, when the kernel's configuration
// forbids unprivileged user namespaces (whoever runs the tests chose so),
// else as RequireEngine (a failure under SANDDUNE_REQUIRE_ENGINES=1).
func requireUnprivilegedBwrap(t *testing.T, cred *syscall.Credential, dir string) {
	t.Helper()
	cmd := exec.Command("bwrap", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	out, err := cmd.CombinedOutput()
	if err == nil {
		return
	}
	err = fmt.Errorf("bwrap as uid %d: %v: %s", cred.Uid, err, strings.TrimSpace(string(out)))
	if off := userNamespacesOff(); off != nil {
		t.Skipf("BUBBLEWRAP UNPRIVILEGED TESTS NOT RUN: %v (%v)", off, err)
	}
	kittest.RequireEngine(t, "bubblewrap (unprivileged)", err)
}

// userNamespacesOff names the kernel setting that forbids unprivileged
// user namespaces here, if one does.
func userNamespacesOff() error {
	for _, s := range []struct{ file, off string }{
		{"/proc/sys/user/max_user_namespaces", "0"},
		{"/proc/sys/kernel/unprivileged_userns_clone", "0"},
		{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"},
	} {
		if b, err := os.ReadFile(s.file); err == nil && strings.TrimSpace(string(b)) == s.off {
			name := strings.ReplaceAll(strings.TrimPrefix(s.file, "/proc/sys/"), "/", ".")
			return errors.New(name + " = " + s.off + ": unprivileged user namespaces are off")
		}
	}
	return nil
}
