package kittest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// nobody is the ordinary user RunAsUser runs tests as.
var nobody = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}

// RunAsUser runs the tests named in tests (a -test.run pattern
// `^(A|B)$`) again as an ordinary user (nobody, 65534:65534), in this test
// binary: bubblewrap unprivileged takes other paths than as root (nested
// user namespaces), and CI runs as root. Every named test must pass there,
// or skip for a reason of its own (a missing engine fails it there: bwrap
// was just shown to work for that user), which skips this test. Run as
// another user than root, the tests ran unprivileged already: skipped. env
// is added to the tests' environment (HOME and TMPDIR are a directory the
// user owns).
//
// It stops the test when bwrap cannot make a sandbox as the user: skipped,
// loudly, when a kernel setting forbids unprivileged user namespaces
// (whoever runs the tests chose so), else as RequireEngine.
func RunAsUser(t *testing.T, tests string, env ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("the tests run as uid %d: unprivileged already", os.Geteuid())
	}
	dir, err := os.MkdirTemp("", "sanddune-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, int(nobody.Uid), int(nobody.Gid)); err != nil {
		t.Fatal(err)
	}
	requireUserBwrap(t, dir)

	// /proc/self/exe reaches this binary past its build directory, which
	// only root may enter.
	cmd := exec.CommandContext(t.Context(), "/proc/self/exe", "-test.run", tests, "-test.v", "-test.count", "1")
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "HOME="+dir, "TMPDIR="+dir, RequireEnginesEnv+"=1"), env...)
	cmd.SysProcAttr = asNobody()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s as uid %d: %v\n%s", tests, nobody.Uid, err, out)
	}
	var skipped []string
	for _, name := range strings.Split(strings.Trim(tests, "^()$"), "|") {
		switch {
		case strings.Contains(string(out), "--- PASS: "+name+" "):
		case strings.Contains(string(out), "--- SKIP: "+name+" "):
			skipped = append(skipped, name)
		default:
			t.Errorf("%s did not run as uid %d:\n%s", name, nobody.Uid, out)
		}
	}
	if len(skipped) > 0 && !t.Failed() {
		t.Skipf("as uid %d, %s skipped:\n%s", nobody.Uid, strings.Join(skipped, ", "), out)
	}
}

// requireUserBwrap stops the test unless bwrap makes a sandbox as the
// user (see RunAsUser).
func requireUserBwrap(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("bwrap", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: nobody}
	out, err := cmd.CombinedOutput()
	if err == nil {
		return
	}
	err = fmt.Errorf("bwrap as uid %d: %v: %s", nobody.Uid, err, strings.TrimSpace(string(out)))
	if off := userNamespacesOff(); off != nil {
		t.Skipf("BUBBLEWRAP UNPRIVILEGED TESTS NOT RUN: %v (%v)", off, err)
	}
	RequireEngine(t, "bubblewrap (unprivileged)", err)
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
